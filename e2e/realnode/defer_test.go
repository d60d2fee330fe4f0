//go:build e2e && realnode

package realnode

// DeferPolicies (docs/defer.md) on the real node: the app's container really stops (the
// kubelet sends SIGTERM, runc reports its exit), and the steps run as real containers on
// that node. Every time below is read on the node itself, from /proc/uptime, which all
// its containers share: the app writes it into its termination message when SIGTERM
// arrives, and each step prints it.

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
)

const (
	// deferTimeout bounds a defer run and the pod's stop in these tests.
	deferTimeout = 90 * time.Second
	// stopExitCode is the app's exit code when its SIGTERM trap ran.
	stopExitCode = 7
	// uptime is a shell line that reads the node's uptime into $up.
	uptime = `read up _ < /proc/uptime`
)

// trapTerm makes dc's app a shell that, on SIGTERM, writes "stopped at <uptime>" to its
// termination message and exits stopExitCode, well within its grace period.
func trapTerm(dc *stagehandv1.DeploymentConfig) {
	dc.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	c := &dc.Spec.Template.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c", `trap '` + uptime + `; echo "stopped at $up" > /dev/termination-log; exit ` +
		strconv.Itoa(stopExitCode) + `' TERM; echo serving; while true; do sleep 1 & wait $!; done`}
}

// createPolicy creates the DeferPolicy web, selecting app=web, with one step that runs
// script in the pushed shell image, and waits until the controller has seen it.
func createPolicy(t *testing.T, ns string, when stagehandv1.DeferWhen, script string) {
	t.Helper()
	p := &stagehandv1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: stagehandv1.DeferPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			When:     when,
			Steps: []stagehandv1.DeferStep{{Name: "clean", Image: env.RealImage(t, "stagehand/shell").Ref,
				Command: []string{"/bin/sh", "-c", script}}},
		},
	}
	policies := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns)
	_, err := policies.Create(t.Context(), p, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := policies.Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil && got.Status.Steps == 1
	}, time.Minute, 100*time.Millisecond, "the controller to see DeferPolicy web")
}

// TestRealNodeDeferAfterTerminationRunsOnceTheContainerStopped deletes a pod of a DC that
// an AfterTermination policy selects. Its container gets SIGTERM and exits through its
// trap (exit 7, with its stop time); only then does the step's container start, on the
// real node; then the finalizer goes and so does the pod.
func TestRealNodeDeferAfterTerminationRunsOnceTheContainerStopped(t *testing.T) {
	requireController(t)
	given := env.Given(t)
	createPolicy(t, given.NS, stagehandv1.DeferAfterTermination,
		uptime+`; echo "clean $STAGEHAND_POD_NAME on $STAGEHAND_NODE_NAME at $up"`)
	dc := realDC(t, "web", 1, stagehandv1.DeploymentStrategyTypeRecreate)
	trapTerm(dc)
	s := given.DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
	app := env.WaitForPods(t, s.NS, "app=web", time.Minute, "the app pod with the defer finalizer", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && stagehandv1.HasDeferFinalizer(ps[0])
	})[0]

	// When it is deleted as kubectl delete pod does
	require.NoError(t, env.Kube.CoreV1().Pods(s.NS).Delete(t.Context(), app.Name, metav1.DeleteOptions{}))

	// Then it goes, after its step. The controller's last write, the outcome without the
	// finalizer, deletes the pod at once when the kubelet has already asked for grace
	// period 0, and the apiserver stores nothing of that write: the last state stored may be
	// the one with the step done and the finalizer still on. The policy counts the outcome.
	env.WaitForPod(t, s.NS, app.Name, deferTimeout, "the pod gone", func(p *corev1.Pod) bool { return p == nil })
	last := lastSeen(t, pods, app, "with its step done", func(p *corev1.Pod) bool { return stagehandv1.DeferProgressOf(p) == "1/1" })
	t.Logf("pod %s, last stored: finalizers %v, deletion grace period %v", app.Name, last.Finalizers, ptr.Deref(last.DeletionGracePeriodSeconds, -1))
	stop := stopped(t, last)
	require.Eventually(t, func() bool {
		p, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(s.NS).Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil && p.Status.Completed == 1 && p.Status.InProgress == 0
	}, 20*time.Second, 100*time.Millisecond, "DeferPolicy web counts one completed run")

	step := onlyStep(t, pods, app)
	log := logOf(t, s.NS, step.Name)
	ran := uptimeIn(t, log, "clean "+app.Name+" on "+localcluster.RealNodeName+" at")
	assert.Greater(t, ran, stop.uptime, "the step ran (%.2f) after the container stopped (%.2f)", ran, stop.uptime)
	stepRun := terminated(t, step)
	assert.False(t, stepRun.StartedAt.Before(&stop.finishedAt), "the step's container started at %s, before the app's finished at %s",
		stepRun.StartedAt, stop.finishedAt)
	events := podEvents(t, s.NS, app)
	for _, reason := range []string{stagehandv1.EventDeferStarted, stagehandv1.EventDeferStepSucceeded, stagehandv1.EventDeferCompleted} {
		assert.Contains(t, events, reason, "the events of pod %s", app.Name)
	}
	noneTerminating(t, s.NS)
	pods.LogAll(t)
}

// TestRealNodeDeferBeforeScaleDownRunsBeforeTheStop scales a DC of three pods to one
// under a BeforeScaleDown policy: each of the two pods that go runs the step, on the real
// node, and its container gets SIGTERM only after the step has ended; the pod that stays
// runs none.
func TestRealNodeDeferBeforeScaleDownRunsBeforeTheStop(t *testing.T) {
	requireController(t)
	given := env.Given(t)
	createPolicy(t, given.NS, stagehandv1.DeferBeforeScaleDown,
		`sleep 2; `+uptime+`; echo "drained $STAGEHAND_POD_NAME at $up"`)
	dc := realDC(t, "web", 3, stagehandv1.DeploymentStrategyTypeRecreate)
	trapTerm(dc)
	s := given.DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(3)

	// When kubectl scale dc/web --replicas=1
	s.When().Scaled(1)

	// Then two pods go, each after its step, and one stays without a step
	left := env.WaitForPods(t, s.NS, "app=web", deferTimeout, "one pod left, none terminating", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].DeletionTimestamp == nil
	})
	s.Then().RevisionReplicas(1, 1)
	assert.NotContains(t, left[0].Annotations, stagehandv1.DeferRunAnnotation, "the pod that stays")
	var gone []*corev1.Pod
	for _, p := range pods.Pods() {
		if p.Labels["app"] == "web" && p.Labels[stagehandv1.DeferStepOfLabel] == "" && p.Name != left[0].Name {
			gone = append(gone, p)
		}
	}
	require.Len(t, gone, 2, "the app pods that went")
	for _, app := range gone {
		stop := stopped(t, app)
		step := onlyStep(t, pods, app)
		done := uptimeIn(t, logOf(t, s.NS, step.Name), "drained "+app.Name+" at")
		assert.Less(t, done, stop.uptime, "pod %s got SIGTERM (%.2f) before its step ended (%.2f)", app.Name, stop.uptime, done)
		require.NotNil(t, app.DeletionTimestamp, "pod %s", app.Name)
		asked := app.DeletionTimestamp.Add(-time.Duration(ptr.Deref(app.DeletionGracePeriodSeconds, 0)) * time.Second)
		stepRun := terminated(t, step)
		assert.False(t, stepRun.FinishedAt.After(asked), "pod %s was deleted at %s, before its step finished at %s",
			app.Name, asked, stepRun.FinishedAt)
		assert.Contains(t, podEvents(t, s.NS, app), stagehandv1.EventDeferCompleted, "the events of pod %s", app.Name)
	}
	for _, p := range pods.Pods() {
		assert.NotEqual(t, string(left[0].UID), p.Labels[stagehandv1.DeferStepOfLabel], "a step ran for the pod that stays: %s", p.Name)
	}
	noneTerminating(t, s.NS)
	pods.LogAll(t)
}

// stop is how an app container stopped: the node's uptime its SIGTERM trap wrote, and
// when the kubelet saw it finish.
type stop struct {
	uptime     float64
	finishedAt metav1.Time
}

// stopped checks that pod's app container exited through its SIGTERM trap, and returns
// when.
func stopped(t *testing.T, pod *corev1.Pod) stop {
	t.Helper()
	term := terminated(t, pod)
	assert.Equal(t, int32(stopExitCode), term.ExitCode, "pod %s: the trap's exit code, not a kill's (%s)", pod.Name, term.Reason)
	return stop{uptime: uptimeIn(t, term.Message, "stopped at"), finishedAt: term.FinishedAt}
}

// terminated is the Terminated state of pod's only container.
func terminated(t *testing.T, pod *corev1.Pod) *corev1.ContainerStateTerminated {
	t.Helper()
	require.Len(t, pod.Status.ContainerStatuses, 1, "pod %s", pod.Name)
	st := pod.Status.ContainerStatuses[0]
	require.NotNil(t, st.State.Terminated, "pod %s, last seen: %+v", pod.Name, st.State)
	require.NotEmpty(t, st.State.Terminated.ContainerID, "pod %s", pod.Name)
	return st.State.Terminated
}

// lastSeen waits until the last state the history saw of pod satisfies cond (the
// history's watch may lag behind the one that saw the pod go), and returns it.
func lastSeen(t *testing.T, h *framework.PodHistory, pod *corev1.Pod, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	ok := assert.Eventually(t, func() bool {
		pods := h.Pods()
		if i := slices.IndexFunc(pods, func(p *corev1.Pod) bool { return p.UID == pod.UID }); i >= 0 {
			last = pods[i]
		}
		return last != nil && cond(last)
	}, 10*time.Second, 50*time.Millisecond, "the last state seen of pod %s %s", pod.Name, what)
	require.NotNil(t, last, "the history never saw pod %s", pod.Name)
	if !ok {
		t.Fatalf("pod %s, last seen: finalizers %v, annotations %v", pod.Name, last.Finalizers, last.Annotations)
	}
	return last
}

// onlyStep is the one step pod that ran for pod, which succeeded on pod's node.
func onlyStep(t *testing.T, h *framework.PodHistory, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	var steps []*corev1.Pod
	for _, p := range h.Pods() {
		if p.Labels[stagehandv1.DeferStepOfLabel] == string(pod.UID) {
			steps = append(steps, p)
		}
	}
	require.Len(t, steps, 1, "the step pods of %s", pod.Name)
	assert.Equal(t, corev1.PodSucceeded, steps[0].Status.Phase, "step pod %s", steps[0].Name)
	assert.Equal(t, localcluster.RealNodeName, steps[0].Spec.NodeName, "step pod %s", steps[0].Name)
	assert.Zero(t, terminated(t, steps[0]).ExitCode, "step pod %s", steps[0].Name)
	return steps[0]
}

// uptimeIn reads the uptime that follows prefix in text.
func uptimeIn(t *testing.T, text, prefix string) float64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + ` ([0-9]+\.[0-9]+)`).FindStringSubmatch(text)
	require.NotNil(t, m, "%q in %q", prefix, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// podEvents are the reasons of the events about pod, waiting a little for the last ones
// (the controller records them asynchronously).
func podEvents(t *testing.T, ns string, pod *corev1.Pod) []string {
	t.Helper()
	var reasons []string
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID)}.String()
	assert.Eventually(t, func() bool {
		list, err := env.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false
		}
		reasons = reasons[:0]
		for _, e := range list.Items {
			reasons = append(reasons, e.Reason)
		}
		return slices.Contains(reasons, stagehandv1.EventDeferCompleted)
	}, 20*time.Second, 200*time.Millisecond, "a DeferCompleted event on pod %s", pod.Name)
	return reasons
}

// noneTerminating waits until no pod of ns is being deleted.
func noneTerminating(t *testing.T, ns string) {
	t.Helper()
	env.WaitForPods(t, ns, "", deferTimeout, "no pod left Terminating", func(ps []*corev1.Pod) bool {
		return !slices.ContainsFunc(ps, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	})
}
