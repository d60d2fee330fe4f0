//go:build e2e

package e2e

// DeferPolicies on the real control plane (docs/defer.md): the steps run as pods on the
// deleted pod's node with its volumes, one after another, and every way out releases the
// finalizer: success, a failed step, the grace period, a forced deletion, a lost node, a
// deleted policy, and a controller killed in the middle.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// deferTimeout bounds a whole defer run in these tests: steps are short shell commands.
const deferTimeout = 90 * time.Second

// shellStep is a step that runs script in the shell image, with the volume data mounted.
func shellStep(name, script string) stagehandv1.DeferStep {
	return stagehandv1.DeferStep{
		Name: name, Image: images.Shell, Command: []string{"/bin/sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
}

// createDeferPolicy creates an AfterTermination policy selecting app=<app> and waits until
// the controller has seen it (its status names the steps).
func createDeferPolicy(t *testing.T, ns, app string, mutate func(*stagehandv1.DeferPolicy), steps ...stagehandv1.DeferStep) *stagehandv1.DeferPolicy {
	t.Helper()
	p := &stagehandv1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: stagehandv1.DeferPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Steps:    steps,
		},
	}
	if mutate != nil {
		mutate(p)
	}
	created, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err, "creating DeferPolicy %s", app)
	require.Eventually(t, func() bool {
		got, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(context.Background(), app, metav1.GetOptions{})
		return err == nil && got.Status.Steps == int32(len(steps))
	}, podTimeout, 100*time.Millisecond, "the controller to see DeferPolicy %s", app)
	return created
}

// dataClaim creates a claim "data" bound to a hostPath volume of its own.
func dataClaim(t *testing.T, ns string) {
	t.Helper()
	createHostPathVolume(t, ns, "/stagehand-test/"+ns+"/data")
	createClaim(t, ns, "data", ns)
	waitForClaimBound(t, ns, "data")
}

// appPod is a running pod labelled app=<app> that runs script and then waits to be
// stopped, with the claim data mounted.
func appPod(name, app, script string) *corev1.Pod {
	pod := shellPod(name, "data", script+"; trap 'exit 0' TERM; while true; do sleep 0.2; done")
	pod.Labels = map[string]string{"app": app}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.Volumes = []corev1.Volume{claimVolume("data", "data")}
	return pod
}

// startAppPod creates pod and waits until it runs and carries the defer finalizer.
func startAppPod(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	createPod(t, ns, pod)
	return env.WaitForPod(t, ns, pod.Name, podTimeout, "the pod running with the defer finalizer", func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(p)
	})
}

// progressWatch records every value of a pod's defer-progress annotation, in order, from
// a watch started before the deletion, until the pod is gone.
type progressWatch struct {
	mu     sync.Mutex
	values []string
	gone   chan struct{}
	goneAt time.Time
}

func watchProgress(t *testing.T, ns, name string) *progressWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(t, err)
	pw := &progressWatch{gone: make(chan struct{})}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.mu.Lock()
			if v, ok := pod.Annotations[stagehandv1.DeferProgressAnnotation]; ok && (len(pw.values) == 0 || pw.values[len(pw.values)-1] != v) {
				pw.values = append(pw.values, v)
			}
			if ev.Type == watch.Deleted {
				pw.goneAt = time.Now()
				pw.mu.Unlock()
				close(pw.gone)
				return
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

// waitGone waits until the watched pod is deleted and returns the progress values seen.
func (pw *progressWatch) waitGone(t *testing.T, timeout time.Duration) []string {
	t.Helper()
	select {
	case <-pw.gone:
	case <-time.After(timeout):
		t.Fatalf("the pod is still there after %s; progress seen %v", timeout, pw.seen())
	}
	return pw.seen()
}

func (pw *progressWatch) seen() []string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return slices.Clone(pw.values)
}

// stepPods are the step pods run for the pod with uid, oldest first.
func stepPods(t *testing.T, ns string, uid string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.DeferStepOfLabel + "=" + uid})
	require.NoError(t, err)
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return list.Items
}

// podEvents are "<reason>: <message>" of the events about one pod, oldest first.
func podEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	require.NoError(t, err)
	slices.SortFunc(list.Items, func(a, b corev1.Event) int {
		if c := a.FirstTimestamp.Compare(b.FirstTimestamp.Time); c != 0 {
			return c
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

// waitEvents waits until the pod has at least n events of reason (the controller sends
// events asynchronously) and returns all of the pod's events.
func waitEvents(t *testing.T, ns, name, reason string, n int) []string {
	t.Helper()
	var events []string
	require.Eventually(t, func() bool {
		events = podEvents(t, ns, name)
		return len(eventsWith(events, reason)) >= n
	}, 20*time.Second, 200*time.Millisecond, "%d %s events of pod %s", n, reason, name)
	return events
}

func eventsWith(events []string, reason string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, reason+": ") {
			out = append(out, e)
		}
	}
	return out
}

func deletePod(t *testing.T, ns, name string, grace *int64) {
	t.Helper()
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: grace}))
}

func TestDeferStepsRunInOrderOnTheSameNodeWithThePodsVolume(t *testing.T) {
	requireController(t)
	given := env.Given(t)
	ns := given.NS
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "web", nil,
		shellStep("first", "echo first >> data/steps"),
		shellStep("second", "echo second >> data/steps; cat data/app-wrote"),
		shellStep("third", "echo third >> data/steps; cat data/steps"),
	)
	// Given a pod of a DeploymentConfig that the policy selects, which wrote a file
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRecreate)
	dc.Spec.Template.Labels["app"] = "web"
	dc.Spec.Template.Spec.Containers = appPod("x", "web", "echo hello-from-the-app > data/app-wrote").Spec.Containers
	dc.Spec.Template.Spec.Volumes = []corev1.Volume{claimVolume("data", "data")}
	dc.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	s := given.DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	pods := env.WaitForPods(t, ns, "app=web", podTimeout, "the DC's pod running with the finalizer", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(ps[0])
	})
	pod := pods[0]
	progress := watchProgress(t, ns, pod.Name)

	// When it is deleted as kubectl delete pod does
	deletePod(t, ns, pod.Name, nil)

	// Then the three steps run in order, and the pod goes once they are done
	seen := progress.waitGone(t, deferTimeout)
	assert.Equal(t, []string{"0/3", "1/3", "2/3", "3/3"}, seen, "the progress annotation, as watched")
	steps := stepPods(t, ns, string(pod.UID))
	require.Len(t, steps, 3, "one pod per step")
	for i, sp := range steps {
		assert.Equal(t, pod.Spec.NodeName, sp.Spec.NodeName, "step %d runs on the pod's node", i+1)
		assert.Equal(t, fmt.Sprint(i+1), sp.Labels[stagehandv1.DeferStepLabel])
		assert.Equal(t, corev1.PodSucceeded, sp.Status.Phase, "step %d", i+1)
	}
	assert.Equal(t, "hello-from-the-app\n", podLog(t, ns, steps[1].Name), "the second step reads what the app wrote")
	assert.Equal(t, "first\nsecond\nthird\n", podLog(t, ns, steps[2].Name), "each step ran once, in order")

	events := waitEvents(t, ns, pod.Name, stagehandv1.EventDeferCompleted, 1)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferStepStarted), 3, "events: %v", events)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferStepSucceeded), 3, "events: %v", events)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferCompleted), 1, "events: %v", events)
	require.Eventually(t, func() bool {
		p, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && p.Status.Completed == 1 && p.Status.InProgress == 0
	}, podTimeout, 100*time.Millisecond, "the policy counts the completed run")
}

func TestDeferRestartPolicyNeverMovesOnAndOnFailureRetries(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "never", nil,
		shellStep("fails", "echo fails >> data/never; exit 3"),
		shellStep("after", "echo after >> data/never; cat data/never"),
	)
	createDeferPolicy(t, ns, "retry", func(p *stagehandv1.DeferPolicy) {
		p.Spec.RestartPolicy = stagehandv1.DeferRestartOnFailure
	},
		// fails on its first two attempts, then succeeds
		shellStep("flaky", "echo try >> data/tries; [ $(wc -l < data/tries) -ge 3 ]"),
		shellStep("after", "cat data/tries"),
	)
	never := startAppPod(t, ns, appPod("never", "never", "true"))
	retry := startAppPod(t, ns, appPod("retry", "retry", "true"))
	neverGone, retryGone := watchProgress(t, ns, "never"), watchProgress(t, ns, "retry")
	deletePod(t, ns, "never", nil)
	deletePod(t, ns, "retry", nil)

	// Never: the failed step is recorded and the next one runs
	assert.Equal(t, []string{"0/2", "1/2", "2/2"}, neverGone.waitGone(t, deferTimeout))
	steps := stepPods(t, ns, string(never.UID))
	require.Len(t, steps, 2, "no second attempt under Never")
	assert.Equal(t, corev1.PodFailed, steps[0].Status.Phase)
	assert.Equal(t, "fails\nafter\n", podLog(t, ns, steps[1].Name))
	events := waitEvents(t, ns, "never", stagehandv1.EventDeferFailed, 1)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferStepFailed), 1, "events: %v", events)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferFailed), 1, "events: %v", events)

	// OnFailure: the step runs again until it succeeds
	assert.Equal(t, []string{"0/2", "1/2", "2/2"}, retryGone.waitGone(t, deferTimeout))
	steps = stepPods(t, ns, string(retry.UID))
	require.Len(t, steps, 4, "three attempts of the flaky step, then the next step")
	assert.Equal(t, []corev1.PodPhase{corev1.PodFailed, corev1.PodFailed, corev1.PodSucceeded, corev1.PodSucceeded},
		[]corev1.PodPhase{steps[0].Status.Phase, steps[1].Status.Phase, steps[2].Status.Phase, steps[3].Status.Phase})
	assert.Equal(t, "try\ntry\ntry\n", podLog(t, ns, steps[3].Name))
	events = waitEvents(t, ns, "retry", stagehandv1.EventDeferCompleted, 1)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferStepFailed), 2, "events: %v", events)
	assert.Len(t, eventsWith(events, stagehandv1.EventDeferCompleted), 1, "events: %v", events)
}

func TestDeferHangingStepIsStoppedAtTheGracePeriod(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	const grace = 6
	createDeferPolicy(t, ns, "hang", func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](grace) },
		shellStep("hangs", "sleep 3600"),
		shellStep("never-runs", "true"),
	)
	pod := startAppPod(t, ns, appPod("hang", "hang", "true"))
	progress := watchProgress(t, ns, "hang")
	deletePod(t, ns, "hang", nil)

	var started time.Time
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		if len(steps) == 1 && steps[0].Status.Phase == corev1.PodRunning {
			started = time.Now()
			return true
		}
		return false
	}, deferTimeout, 100*time.Millisecond, "the hanging step to run")

	// The pod goes within the grace period plus a small margin, counted from the step's
	// start (which the test saw a little after it happened).
	progress.waitGone(t, grace*time.Second+15*time.Second)
	assert.Less(t, progress.goneAt.Sub(started), grace*time.Second+10*time.Second, "the pod is gone soon after the grace period")
	// The hanging step's pod is deleted when the grace period ends (it may be gone by now);
	// the second step never ran.
	steps := stepPods(t, ns, string(pod.UID))
	require.LessOrEqual(t, len(steps), 1, "the rest is skipped")
	for _, sp := range steps {
		assert.NotContains(t, sp.Name, "never-runs", "the rest is skipped")
	}
	events := waitEvents(t, ns, "hang", stagehandv1.EventDeferTimedOut, 1)
	timedOut := eventsWith(events, stagehandv1.EventDeferTimedOut)
	require.Len(t, timedOut, 1, "events: %v", events)
	assert.Contains(t, timedOut[0], "gracePeriodSeconds (6s) ran out during step 1/2 (hangs)")
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 0 || steps[0].DeletionTimestamp != nil || steps[0].Status.Phase != corev1.PodRunning
	}, podTimeout, 100*time.Millisecond, "the hanging step's pod to be stopped")
}

func TestDeferForcedDeletionSkipsTheSteps(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "forced", nil, shellStep("never-runs", "true"))
	pod := startAppPod(t, ns, appPod("forced", "forced", "true"))
	progress := watchProgress(t, ns, "forced")

	// kubectl delete pod --grace-period=0 --force
	deletePod(t, ns, "forced", ptr.To[int64](0))

	progress.waitGone(t, podTimeout)
	assert.Empty(t, stepPods(t, ns, string(pod.UID)), "no step runs")
	events := waitEvents(t, ns, "forced", stagehandv1.EventDeferSkipped, 1)
	skipped := eventsWith(events, stagehandv1.EventDeferSkipped)
	require.Len(t, skipped, 1, "events: %v", events)
	assert.Contains(t, skipped[0], "grace period 0")
}

func TestDeferDeletedNodeReleasesItsPods(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	createDeferPolicy(t, ns, "lost", nil, stagehandv1.DeferStep{Name: "never-runs", Image: images.Shell, Command: []string{"true"}})
	// Given a Node that no kubelet runs, and a pod bound to it: its containers never stop
	node, err := env.Kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-gone"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	pod := shellPod("lost", "data", "true")
	pod.Labels = map[string]string{"app": "lost"}
	pod.Spec.NodeName = node.Name
	pod.Spec.Containers[0].VolumeMounts = nil
	createPod(t, ns, pod)
	env.WaitForPod(t, ns, "lost", podTimeout, "the finalizer", func(p *corev1.Pod) bool { return p != nil && stagehandv1.HasDeferFinalizer(p) })
	deletePod(t, ns, "lost", nil)
	time.Sleep(time.Second)
	held, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), "lost", metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, stagehandv1.HasDeferFinalizer(held), "the finalizer holds while the node may still stop the pod")

	// When the Node is deleted
	require.NoError(t, env.Kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}))

	// Then the finalizer is released with a Warning event, and nothing ran
	env.WaitForPod(t, ns, "lost", podTimeout, "the finalizer released", func(p *corev1.Pod) bool {
		return p == nil || !stagehandv1.HasDeferFinalizer(p)
	})
	events := waitEvents(t, ns, "lost", stagehandv1.EventDeferSkipped, 1)
	skipped := eventsWith(events, stagehandv1.EventDeferSkipped)
	require.Len(t, skipped, 1, "events: %v", events)
	assert.Contains(t, skipped[0], "is gone")
	assert.Empty(t, stepPods(t, ns, string(held.UID)))
	// The pod itself goes when nothing holds it: no kubelet will confirm its stop, so it
	// is deleted for good here, as the pod garbage collector does for pods of a deleted
	// Node.
	err = env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "lost", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	env.WaitForPod(t, ns, "lost", podTimeout, "the pod gone", func(p *corev1.Pod) bool { return p == nil })
}

func TestDeferDeletedPolicyReleasesItsWaitingPods(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "dropped", func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](600) },
		shellStep("hangs", "sleep 3600"))
	pod := startAppPod(t, ns, appPod("dropped", "dropped", "true"))
	progress := watchProgress(t, ns, "dropped")
	deletePod(t, ns, "dropped", nil)
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 1 && steps[0].Status.Phase == corev1.PodRunning
	}, deferTimeout, 100*time.Millisecond, "the step to run")

	// When the policy is deleted while the pod waits for its step
	require.NoError(t, env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Delete(context.Background(), "dropped", metav1.DeleteOptions{}))

	// Then the pod is released and goes, and its step is stopped
	progress.waitGone(t, podTimeout)
	events := waitEvents(t, ns, "dropped", stagehandv1.EventDeferSkipped, 1)
	skipped := eventsWith(events, stagehandv1.EventDeferSkipped)
	require.Len(t, skipped, 1, "events: %v", events)
	assert.Contains(t, skipped[0], "DeferPolicy dropped was deleted")
}

func TestDeferResumesAfterTheControllerIsKilledDuringAStep(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "resume", nil,
		shellStep("one", "echo one >> data/ran"),
		shellStep("two", "echo two >> data/ran; sleep 4"),
		shellStep("three", "echo three >> data/ran; cat data/ran"),
	)
	pod := startAppPod(t, ns, appPod("resume", "resume", "true"))
	progress := watchProgress(t, ns, "resume")
	deletePod(t, ns, "resume", nil)
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 2 && steps[1].Status.Phase == corev1.PodRunning
	}, deferTimeout, 50*time.Millisecond, "step 2 to run")

	// When the controller is killed during step 2
	env.KillController(t)
	env.WaitForController(t)

	// Then step 3 runs after the restart, and step 1 did not run again
	assert.Equal(t, "3/3", lastOf(progress.waitGone(t, deferTimeout)))
	steps := stepPods(t, ns, string(pod.UID))
	require.Len(t, steps, 3, "one pod per step: none ran twice")
	assert.Equal(t, "one\ntwo\nthree\n", podLog(t, ns, steps[2].Name))
}

func lastOf(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}
