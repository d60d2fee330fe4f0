//go:build e2e

package e2e

// BeforeEviction DeferPolicies (docs/defer.md, "BeforeEviction"): Stagehand answers the
// EvictionRequests of Kubernetes 1.37 (lifecycle.k8s.io/v1alpha1, alpha, on in the local
// control plane) for the pods that name it. The tests create the requests as a drain
// would; 1.37's kubectl drain still calls pods/eviction directly (docs/evictions.md).

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// evictionTimeout bounds one eviction: the 5 s the driver waits for a controller, the
// steps, and a PodDisruptionBudget's wait for a replacement.
const evictionTimeout = 2 * time.Minute

// idleContainer runs until it is stopped.
func idleContainer() corev1.Container {
	return corev1.Container{Name: "app", Image: images.Shell,
		Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"}}
}

// requestEviction creates the EvictionRequest drain-<pod> for pod, as a drain would.
func requestEviction(t *testing.T, ns string, pod *corev1.Pod) *lifecyclev1alpha1.EvictionRequest {
	t.Helper()
	return requestEvictionNamed(t, ns, "drain-"+pod.Name, pod)
}

func requestEvictionNamed(t *testing.T, ns, name string, pod *corev1.Pod) *lifecyclev1alpha1.EvictionRequest {
	t.Helper()
	r, err := env.Kube.LifecycleV1alpha1().EvictionRequests(ns).Create(context.Background(), &lifecyclev1alpha1.EvictionRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: lifecyclev1alpha1.EvictionRequestSpec{
			Target:    lifecyclev1alpha1.EvictionRequestTarget{Pod: &lifecyclev1alpha1.EvictionRequestPodReference{Name: pod.Name, UID: pod.UID}},
			Requester: "e2e.stagehand.dev/drain", Intent: lifecyclev1alpha1.EvictionRequestIntentEviction,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating the EvictionRequest of %s", pod.Name)
	return r
}

// requestCondition is the condition typ of the request name, or nil.
func requestCondition(t *testing.T, ns, name, typ string) *metav1.Condition {
	r, err := env.Kube.LifecycleV1alpha1().EvictionRequests(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return meta.FindStatusCondition(r.Status.Conditions, typ)
}

var heartbeatRE = regexp.MustCompile(`last heartbeat (\S+)$`)

// evictionLog follows a namespace's EvictionRequests and Evictions: the heartbeats each
// request showed in its condition stagehand.dev/DeferSteps, and every message of the
// default evictor.
type evictionLog struct {
	mu         sync.Mutex
	heartbeats map[string]map[string]bool // request → heartbeat times seen
	evictor    []string
}

func followEvictions(t *testing.T, ns string) *evictionLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &evictionLog{heartbeats: map[string]map[string]bool{}}
	rw, err := env.Kube.LifecycleV1alpha1().EvictionRequests(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	ew, err := env.Kube.LifecycleV1alpha1().Evictions(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	go func() {
		for ev := range rw.ResultChan() {
			r, ok := ev.Object.(*lifecyclev1alpha1.EvictionRequest)
			if !ok {
				continue
			}
			if c := meta.FindStatusCondition(r.Status.Conditions, stagehandv1.EvictionRequestConditionDeferSteps); c != nil {
				if m := heartbeatRE.FindStringSubmatch(c.Message); m != nil {
					l.mu.Lock()
					if l.heartbeats[r.Name] == nil {
						l.heartbeats[r.Name] = map[string]bool{}
					}
					l.heartbeats[r.Name][m[1]] = true
					l.mu.Unlock()
				}
			}
		}
	}()
	go func() {
		for ev := range ew.ResultChan() {
			e, ok := ev.Object.(*lifecyclev1alpha1.Eviction)
			if !ok {
				continue
			}
			for _, rs := range e.Status.Responders {
				if rs.Name == lifecyclev1alpha1.EvictionResponderImperativeEviction && rs.Message != nil {
					l.mu.Lock()
					l.evictor = append(l.evictor, *rs.Message)
					l.mu.Unlock()
				}
			}
		}
	}()
	return l
}

func (l *evictionLog) beats(request string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.heartbeats[request])
}

func (l *evictionLog) evictorSaid(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.evictor {
		if strings.Contains(m, part) {
			return true
		}
	}
	return false
}

// Two pods of a Deployment, drained: each pod's steps run in order while it runs, the
// request shows the heartbeats, each pod is evicted only after its steps, one at a time
// as the PodDisruptionBudget allows; then its AfterTermination steps run, and the
// BeforeEviction steps do not run again.
func TestDeferBeforeEvictionRunsTheStepsThenEvictsWithinTheBudget(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	ns := env.Given(t).NS
	createDeferPolicy(t, ns, "web", func(p *stagehandv1.DeferPolicy) { p.Spec.When = stagehandv1.DeferBeforeEviction },
		stagehandv1.DeferStep{Name: "handover", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo handing over $STAGEHAND_POD_NAME; sleep 21"}},
		stagehandv1.DeferStep{Name: "deregister", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo deregistered $STAGEHAND_POD_NAME"}})
	after := &stagehandv1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-after"}, Spec: stagehandv1.DeferPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Steps:    []stagehandv1.DeferStep{{Name: "after", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo after"}}}}}
	_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, after, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	// A replacement is Ready 8 s after it starts: the second eviction meets the budget.
	slowReady := idleContainer()
	slowReady.ReadinessProbe = &corev1.Probe{InitialDelaySeconds: 8, PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	_, err = env.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](2), Containers: []corev1.Container{slowReady}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := env.WaitForPods(t, ns, "app=web", podTimeout, "two ready pods", func(ps []*corev1.Pod) bool {
		return len(ps) == 2 && framework.PodReady(ps[0]) && framework.PodReady(ps[1])
	})
	for _, p := range pods {
		require.True(t, stagehandv1.HasEvictionResponder(p), "the admission policy gave %s the responder: %v", p.Name, p.Spec.EvictionResponders)
	}
	history := followPods(t, ns, "app=web")
	evictions := followEvictions(t, ns)
	history.startCounting()

	// When both are asked to leave at once
	for _, p := range pods {
		requestEviction(t, ns, p)
	}

	// Then each goes, after its steps
	for _, p := range pods {
		env.WaitForPod(t, ns, p.Name, evictionTimeout, "the pod evicted and gone", func(got *corev1.Pod) bool { return got == nil })
	}
	outcome, deleted, minActive := history.snapshot()
	for _, p := range pods {
		require.Contains(t, outcome, p.Name, "%s had a run", p.Name)
		require.Contains(t, deleted, p.Name)
		assert.True(t, outcome[p.Name].Before(deleted[p.Name]), "%s: its steps ended (%s) before its deletion (%s)", p.Name, outcome[p.Name], deleted[p.Name])
		assert.GreaterOrEqual(t, evictions.beats("drain-"+p.Name), 2, "the request of %s showed the heartbeats", p.Name)
		steps := stepPods(t, ns, string(p.UID))
		var before, afterSteps []string
		for _, sp := range steps {
			if strings.HasSuffix(sp.Name, "-b") {
				before = append(before, sp.Labels[stagehandv1.DeferStepLabel])
				assert.Equal(t, corev1.PodSucceeded, sp.Status.Phase, sp.Name)
				assert.Equal(t, p.Spec.NodeName, sp.Spec.NodeName, "%s runs on the pod's node", sp.Name)
			} else {
				afterSteps = append(afterSteps, sp.Name)
			}
		}
		assert.Equal(t, []string{"1", "2"}, before, "%s: the BeforeEviction steps ran once, in order", p.Name)
		assert.Len(t, afterSteps, 1, "%s: the AfterTermination step ran after the eviction", p.Name)
		events := waitEvents(t, ns, p.Name, stagehandv1.EventDeferEvicting, 1)
		assert.Len(t, eventsWith(events, stagehandv1.EventDeferCompleted), 2, "%s: both runs completed: %v", p.Name, events)
		assert.True(t, podLogContains(t, ns, steps[0].Name, "handing over "+p.Name))
	}
	assert.GreaterOrEqual(t, minActive, 1, "the budget kept one pod serving at every moment")
	assert.True(t, evictions.evictorSaid("disruption budget"), "the second eviction waited for the budget: %v", evictions.evictor)
	assert.True(t, evictions.evictorSaid("evicted through pods/eviction"))
}

// A blocking step failure keeps the pod running and fails the request with the run's
// message; a withdrawn request stops a hanging step, and the pod keeps running.
func TestDeferBeforeEvictionBlocksOnFailureAndStopsWhenWithdrawn(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	ns := env.Given(t).NS
	be := func(p *stagehandv1.DeferPolicy) { p.Spec.When = stagehandv1.DeferBeforeEviction }
	createDeferPolicy(t, ns, "block", be, stagehandv1.DeferStep{Name: "handover", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo no peer; exit 3"}})
	createDeferPolicy(t, ns, "hang", be, stagehandv1.DeferStep{Name: "hang", Image: images.Shell, Command: []string{"/bin/sh", "-c", "sleep 600"}})
	start := func(name, app string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](2), Containers: []corev1.Container{idleContainer()}}}
		createPod(t, ns, pod)
		return env.WaitForPod(t, ns, name, podTimeout, "running", func(p *corev1.Pod) bool {
			return p != nil && p.Status.Phase == corev1.PodRunning
		})
	}
	blocker, hanger := start("blocker", "block"), start("hanger", "hang")

	// When the blocker's eviction is requested, and its step fails
	requestEviction(t, ns, blocker)
	var failed *metav1.Condition
	require.Eventually(t, func() bool {
		failed = requestCondition(t, ns, "drain-blocker", string(lifecyclev1alpha1.EvictionConditionFailed))
		return failed != nil && failed.Status == metav1.ConditionTrue
	}, evictionTimeout, 200*time.Millisecond, "the request Failed")
	// Then the request carries the message, an event names the step, and the pod runs on
	assert.Contains(t, failed.Message, "steps failed: handover")
	assert.Contains(t, failed.Message, "the eviction is blocked")
	steps := requestCondition(t, ns, "drain-blocker", stagehandv1.EvictionRequestConditionDeferSteps)
	require.NotNil(t, steps)
	assert.Equal(t, "Blocked", steps.Reason)
	events := waitEvents(t, ns, "blocker", stagehandv1.EventDeferEvictionBlocked, 1)
	assert.NotEmpty(t, eventsWith(events, stagehandv1.EventDeferStepFailed), "%v", events)
	assert.Contains(t, strings.Join(eventsWith(events, stagehandv1.EventDeferStepFailed), "\n"), "(handover)")
	status := pluginOK(t, ns, "defer", "status", "blocker").Stdout
	for _, want := range []string{"BeforeEviction", "Outcome: Failed: steps failed: handover", "drain-blocker", "e2e.stagehand.dev/drain", "Blocked",
		"Failed: stagehand.dev/defer: DeferPolicy block: steps failed: handover", "blocker-defer-"} {
		assert.Contains(t, status, want, "kubectl stagehand defer status blocker shows the eviction's steps")
	}
	time.Sleep(3 * time.Second)
	p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "blocker", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, p.DeletionTimestamp, "a blocked eviction leaves the pod alone")
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)

	// When the step is mended and the eviction asked for again, the steps run again and
	// the pod goes
	mended, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(ctx, "block", metav1.GetOptions{})
	require.NoError(t, err)
	mended.Spec.Steps[0].Command = []string{"/bin/sh", "-c", "echo handed over"}
	_, err = env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Update(ctx, mended, metav1.UpdateOptions{})
	require.NoError(t, err)
	again := requestEvictionNamed(t, ns, "drain-blocker-again", blocker)
	env.WaitForPod(t, ns, "blocker", evictionTimeout, "evicted after the steps ran again", func(p *corev1.Pod) bool { return p == nil })
	var handedOver bool
	for _, sp := range stepPods(t, ns, string(blocker.UID)) {
		handedOver = handedOver || sp.Status.Phase == corev1.PodSucceeded && podLogContains(t, ns, sp.Name, "handed over")
	}
	assert.True(t, handedOver, "the mended step ran for the new request")
	require.Eventually(t, func() bool {
		c := requestCondition(t, ns, again.Name, string(lifecyclev1alpha1.EvictionConditionTargetEvicted))
		return c != nil && c.Status == metav1.ConditionTrue
	}, 20*time.Second, 200*time.Millisecond, "the new request says the pod was evicted")

	// When the hanger's request is withdrawn while its step hangs
	requestEviction(t, ns, hanger)
	stepName := ""
	require.Eventually(t, func() bool {
		for _, sp := range stepPods(t, ns, string(hanger.UID)) {
			if sp.Status.Phase == corev1.PodRunning {
				stepName = sp.Name
				return true
			}
		}
		return false
	}, evictionTimeout, 200*time.Millisecond, "the hanging step runs")
	r, err := env.Kube.LifecycleV1alpha1().EvictionRequests(ns).Get(ctx, "drain-hanger", metav1.GetOptions{})
	require.NoError(t, err)
	r.Spec.Intent = lifecyclev1alpha1.EvictionRequestIntentWithdrawn
	_, err = env.Kube.LifecycleV1alpha1().EvictionRequests(ns).Update(ctx, r, metav1.UpdateOptions{})
	require.NoError(t, err)
	withdrawn := time.Now()

	// Then the step stops within its grace (1 s, and the node agent's stop), the run ends
	// Skipped, and the pod runs on
	env.WaitForPod(t, ns, stepName, 20*time.Second, "the hanging step stopped", func(sp *corev1.Pod) bool {
		return sp == nil || sp.DeletionTimestamp != nil || sp.Status.Phase == corev1.PodFailed || sp.Status.Phase == corev1.PodSucceeded
	})
	t.Logf("the step was stopped %s after the withdrawal", time.Since(withdrawn).Round(100*time.Millisecond))
	got := env.WaitForPod(t, ns, "hanger", 20*time.Second, "the run Skipped", func(p *corev1.Pod) bool {
		run, err := stagehandv1.DeferRunOf(p)
		return err == nil && run != nil && run.Outcome == stagehandv1.DeferSkipped
	})
	run, _ := stagehandv1.DeferRunOf(got)
	assert.Contains(t, run.Message, "every EvictionRequest was withdrawn")
	assert.Nil(t, got.DeletionTimestamp)
	require.Eventually(t, func() bool {
		c := requestCondition(t, ns, "drain-hanger", string(lifecyclev1alpha1.EvictionConditionFailed))
		return c != nil && c.Reason == string(lifecyclev1alpha1.EvictionConditionReasonCanceledDueToNoRequesters)
	}, 20*time.Second, 200*time.Millisecond, "the request says it was canceled")
}

func podLogContains(t *testing.T, ns, pod, part string) bool {
	t.Helper()
	return strings.Contains(podLog(t, ns, pod), part)
}

// A controller killed (SIGKILL) during a BeforeEviction step: the restarted one finds the
// run and the Eviction where they were; no step runs twice, and the pod is evicted once
// its steps end.
func TestDeferBeforeEvictionResumesAfterTheControllerIsKilled(t *testing.T) {
	requireController(t)
	ns := env.Given(t).NS
	createDeferPolicy(t, ns, "resume", func(p *stagehandv1.DeferPolicy) { p.Spec.When = stagehandv1.DeferBeforeEviction },
		stagehandv1.DeferStep{Name: "one", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo one"}},
		stagehandv1.DeferStep{Name: "two", Image: images.Shell, Command: []string{"/bin/sh", "-c", "sleep 4"}},
		stagehandv1.DeferStep{Name: "three", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo three"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resume", Labels: map[string]string{"app": "resume"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](2), Containers: []corev1.Container{idleContainer()}}}
	createPod(t, ns, pod)
	pod = env.WaitForPod(t, ns, "resume", podTimeout, "running", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodRunning })
	history := followPods(t, ns, "app=resume")
	requestEviction(t, ns, pod)
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 2 && steps[1].Status.Phase == corev1.PodRunning
	}, evictionTimeout, 50*time.Millisecond, "step 2 to run")

	// When the controller is killed during step 2
	env.KillController(t)
	env.WaitForController(t)

	// Then the steps go on from there, and the pod is evicted after them
	env.WaitForPod(t, ns, "resume", evictionTimeout, "the pod evicted and gone", func(p *corev1.Pod) bool { return p == nil })
	steps := stepPods(t, ns, string(pod.UID))
	require.Len(t, steps, 3, "one pod per step: none ran twice")
	for _, sp := range steps {
		assert.Equal(t, corev1.PodSucceeded, sp.Status.Phase, sp.Name)
	}
	outcome, deleted, _ := history.snapshot()
	require.Contains(t, outcome, "resume")
	assert.True(t, outcome["resume"].Before(deleted["resume"]), "the steps ended before the eviction")
}

// The controller records whether the cluster serves the EvictionRequest API, and where it
// does not (make test-oldest, 1.34) a BeforeEviction policy is refused at admission with
// a message that says so; where it does, the policy is admitted.
func TestDeferBeforeEvictionNeedsTheEvictionRequestAPI(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	_, err := env.Kube.Discovery().ServerResourcesForGroupVersion("lifecycle.k8s.io/v1alpha1")
	served := err == nil
	want := map[bool]string{true: stagehandv1.CapabilityServed, false: stagehandv1.CapabilityNotServed}[served]
	require.Eventually(t, func() bool {
		cm, err := env.Kube.CoreV1().ConfigMaps("stagehand-system").Get(ctx, stagehandv1.CapabilitiesConfigMap, metav1.GetOptions{})
		return err == nil && cm.Data[stagehandv1.CapabilityEvictionRequestAPI] == want
	}, podTimeout, 200*time.Millisecond, "the controller records evictionRequestAPI: %s", want)

	ns := env.Given(t).NS
	p := &stagehandv1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: "handover"}, Spec: stagehandv1.DeferPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, When: stagehandv1.DeferBeforeEviction,
		Steps: []stagehandv1.DeferStep{{Name: "handover", Image: images.Shell}}}}
	_, err = env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, p, metav1.CreateOptions{})
	if served {
		require.NoError(t, err, "the cluster serves the API")
		// The run-code policy covers the phase: steps that run while the pod serves need
		// create pods, as every DeferPolicy's.
		bindEdit(t, ns, "erin")
		_, erin := impersonating(t, "erin")
		p.Name = "erins"
		_, err = erin.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, p, metav1.CreateOptions{})
		assert.Contains(t, deniedBy(t, runCodePolicy, err), "code in a pod: you need create pods in namespace "+ns)
		return
	}
	require.Error(t, err, "a BeforeEviction policy where no eviction would run it")
	assert.Contains(t, err.Error(), "spec.when: BeforeEviction needs the EvictionRequest API (lifecycle.k8s.io/v1alpha1")
	assert.Contains(t, err.Error(), "Use when: AfterTermination")
}
