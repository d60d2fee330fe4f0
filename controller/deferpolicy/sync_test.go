package deferpolicy

// A run's course through its steps (AfterTermination and BeforeScaleDown), its failures
// and its deadline, and the finalizer on running pods. The runs skipped are in
// skip_test.go.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// cleanup is the two-step AfterTermination policy that selects db-0.
func cleanup() *v1alpha1.DeferPolicy {
	return policy("cleanup", v1alpha1.DeferAfterTermination, "db", "flush", "archive")
}

func readyNode() *corev1.Node { return node(nodeA, true, t0.Add(-time.Hour)) }

func assertReleased(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	assert.Equal(t, []string{"example.com/other"}, pod.Finalizers, "the defer finalizer is removed, the others stay")
}

// A deleted pod's run, from its record to its release: the record waits for the
// containers to stop, then the clock starts, then each step's attempt is recorded before
// its pod is created on the pod's node, and each success moves the progress on.
func TestAfterTerminationRunsTheStepsInOrderThenReleasesThePod(t *testing.T) {
	f := newFixture(t, deleting(runningPod(), 30), cleanup(), readyNode())

	f.syncPod(podName)
	assert.Equal(t, []string{"update pods db-0"}, f.actions())
	pod := f.pod(podName)
	run := runOf(t, pod)
	assert.Equal(t, v1alpha1.DeferRun{Policy: "cleanup", PolicyUID: "uid-cleanup", When: v1alpha1.DeferAfterTermination, Steps: 2}, *run)
	assert.Equal(t, "0/2", pod.Annotations[v1alpha1.DeferProgressAnnotation])
	assert.Contains(t, pod.Finalizers, v1alpha1.DeferFinalizer)
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStarted))

	// The containers still run: nothing to do until they stop.
	f.syncPod(podName)
	assert.Empty(t, f.actions())

	f.cache(ended(pod, corev1.PodFailed))
	f.syncPod(podName)
	run = runOf(t, f.pod(podName))
	require.NotNil(t, run.Started)
	assert.True(t, run.Started.Time.Equal(t0))
	assert.True(t, run.Deadline.Time.Equal(t0.Add(60*time.Second)), "started + gracePeriodSeconds")
	assert.Zero(t, run.Attempt, "no step yet")

	f.clock = t0.Add(time.Second)
	f.syncPod(podName)
	assert.Equal(t, []string{"update pods db-0"}, f.actions(), "the attempt is recorded before its pod exists")
	run = runOf(t, f.pod(podName))
	assert.Equal(t, 0, run.Current)
	assert.Equal(t, 1, run.Attempt)

	f.syncPod(podName)
	assert.Equal(t, []string{"create pods db-0-defer-0123abcd-1-1"}, f.actions())
	sp := f.pod("db-0-defer-0123abcd-1-1")
	assert.Equal(t, nodeA, sp.Spec.NodeName)
	assert.Equal(t, "1", sp.Labels[v1alpha1.DeferStepLabel])
	assert.Equal(t, []string{"sh", "-c", "flush"}, sp.Spec.Containers[0].Command)
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStepStarted))

	// The step still runs.
	f.syncPod(podName)
	assert.Empty(t, f.actions())

	sp.Status.Phase = corev1.PodSucceeded
	f.cache(sp)
	f.syncPod(podName)
	pod = f.pod(podName)
	run = runOf(t, pod)
	assert.Equal(t, 1, run.Current)
	assert.Zero(t, run.Attempt)
	assert.Empty(t, run.Failed)
	assert.Equal(t, "1/2", pod.Annotations[v1alpha1.DeferProgressAnnotation])
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStepSucceeded))

	f.syncPod(podName) // attempt 1 of step 2
	f.pod(podName)
	f.syncPod(podName)
	assert.Equal(t, []string{"create pods db-0-defer-0123abcd-2-1"}, f.actions())
	sp = f.pod("db-0-defer-0123abcd-2-1")
	assert.Equal(t, []string{"sh", "-c", "archive"}, sp.Spec.Containers[0].Command)
	sp.Status.Phase = corev1.PodSucceeded
	f.cache(sp)
	f.syncPod(podName)
	assert.Equal(t, "2/2", f.pod(podName).Annotations[v1alpha1.DeferProgressAnnotation])

	f.syncPod(podName)
	pod = f.pod(podName)
	assert.Equal(t, v1alpha1.DeferCompleted, runOf(t, pod).Outcome)
	assertReleased(t, pod)
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferCompleted))
	assert.Equal(t, int64(1), f.policyStatus("cleanup").Completed)
}

func TestAFailedStepUnderNeverIsRecordedAndTheNextStepRuns(t *testing.T) {
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), inRun(0))
	p := cleanup()
	f := newFixture(t, pod, p, readyNode(), stepPod(t, pod, p, inRun(0), corev1.PodFailed, 3))

	f.syncPod(podName)
	pod = f.pod(podName)
	run := runOf(t, pod)
	assert.Equal(t, []string{"flush"}, run.Failed)
	assert.Equal(t, 1, run.Current)
	assert.Zero(t, run.Attempt)
	assert.Empty(t, run.Outcome)
	assert.Equal(t, "1/2", pod.Annotations[v1alpha1.DeferProgressAnnotation])
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStepFailed), "exit code 3")

	// The last step succeeds: the run failed all the same.
	last := &v1alpha1.DeferRun{}
	*last = *run
	last.Attempt = 1
	f.cache(withRun(pod, last))
	f.cache(stepPod(t, pod, p, last, corev1.PodSucceeded, 0))
	f.syncPod(podName)
	f.pod(podName)
	f.syncPod(podName)
	pod = f.pod(podName)
	run = runOf(t, pod)
	assert.Equal(t, v1alpha1.DeferFailed, run.Outcome)
	assert.Contains(t, run.Message, "flush")
	assertReleased(t, pod)
	assert.Equal(t, int64(1), f.policyStatus("cleanup").Failed)
}

func TestAFailedStepUnderOnFailureRunsAgainAfterTheBackoff(t *testing.T) {
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), inRun(0))
	p := cleanup()
	p.Spec.RestartPolicy = v1alpha1.DeferRestartOnFailure
	f := newFixture(t, pod, p, readyNode(), stepPod(t, pod, p, inRun(0), corev1.PodFailed, 1))

	f.syncPod(podName)
	run := runOf(t, f.pod(podName))
	assert.Equal(t, 0, run.Current, "the same step")
	assert.Equal(t, 2, run.Attempt)
	require.NotNil(t, run.NotBefore)
	assert.True(t, run.NotBefore.Time.Equal(t0.Add(time.Second)), "1 s after the first attempt, got %s", run.NotBefore)
	assert.Empty(t, run.Failed)

	err := f.sync(kindPod + "/ns/" + podName)
	assert.True(t, plumbing.IsRequeue(err), "waits out the back-off: %v", err)
	assert.Empty(t, f.actions())

	f.clock = t0.Add(time.Second)
	f.syncPod(podName)
	assert.Equal(t, []string{"create pods db-0-defer-0123abcd-1-2"}, f.actions(), "attempt 2 gets a pod of its own")
}

func TestARunPastItsDeadlineStopsTheStepAndReleasesThePod(t *testing.T) {
	run := inRun(0)
	run.Deadline = &metav1.Time{Time: t0.Add(-time.Second)}
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), run)
	p := cleanup()
	f := newFixture(t, pod, p, readyNode(), stepPod(t, pod, p, run, corev1.PodRunning, 0))

	f.syncPod(podName)
	assert.Equal(t, []string{"delete pods db-0-defer-0123abcd-1-1", "update pods db-0"}, f.actions())
	pod = f.pod(podName)
	got := runOf(t, pod)
	assert.Equal(t, v1alpha1.DeferTimedOut, got.Outcome)
	assert.Contains(t, got.Message, "step 1/2 (flush)")
	assertReleased(t, pod)
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferTimedOut))
	assert.Equal(t, int64(1), f.policyStatus("cleanup").TimedOut)
}

func TestEnsureFinalizerAddsItToRunningPodsAnAfterTerminationPolicySelects(t *testing.T) {
	bare := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := runningPod()
		p.Finalizers = []string{"example.com/other"}
		if mut != nil {
			mut(p)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		policy *v1alpha1.DeferPolicy
		add    bool
	}{
		{"selected and lacking it", bare(nil), cleanup(), true},
		{"selected, has it", runningPod(), cleanup(), false},
		{"only a BeforeScaleDown policy selects it", bare(nil), policy("drain", v1alpha1.DeferBeforeScaleDown, "db", "x"), false},
		{"not selected", bare(nil), policy("web", v1alpha1.DeferAfterTermination, "web", "x"), false},
		{"terminal", bare(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), cleanup(), false},
		{"a step's pod", bare(func(p *corev1.Pod) { p.Labels[v1alpha1.DeferStepOfLabel] = "x" }), cleanup(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.pod, tc.policy)
			f.syncPod(podName)
			if !tc.add {
				assert.Empty(t, f.actions())
				return
			}
			assert.Equal(t, []string{"update pods db-0"}, f.actions())
			assert.Equal(t, []string{"example.com/other", v1alpha1.DeferFinalizer}, f.pod(podName).Finalizers)
		})
	}
}

// A pod chosen for a scale-down runs its BeforeScaleDown steps while it runs; deleted
// before they end, its run is Skipped and the steps are stopped.
func TestBeforeScaleDownRunOnAChosenPod(t *testing.T) {
	p := policy("drain", v1alpha1.DeferBeforeScaleDown, "db", "flush")
	run := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1}
	pod := withRun(runningPod(), run)
	pod.Finalizers = nil
	f := newFixture(t, pod, p, readyNode())

	f.syncPod(podName)
	got := runOf(t, f.pod(podName))
	require.NotNil(t, got.Started, "the steps start while the pod runs")
	f.syncPod(podName)
	f.pod(podName)
	f.syncPod(podName)
	assert.Equal(t, []string{"create pods db-0-defer-0123abcd-1-1-b"}, f.actions(), "a run before the pod stops has its own names")
	sp := f.pod("db-0-defer-0123abcd-1-1-b")
	assert.Contains(t, sp.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAGEHAND_DEFER_WHEN", Value: "BeforeScaleDown"})

	gone := f.pod(podName)
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	f.cache(gone)
	f.syncPod(podName)
	assert.Equal(t, []string{"delete pods db-0-defer-0123abcd-1-1-b", "update pods db-0"}, f.actions())
	got = runOf(t, f.pod(podName))
	assert.Equal(t, v1alpha1.DeferSkipped, got.Outcome)
	assert.Contains(t, got.Message, "deleted before its steps ended")
}

func TestSyncIgnoresPodsItNeedNotTouch(t *testing.T) {
	step := runningPod()
	step.Name, step.UID = "db-0-defer-0123abcd-1-1", types.UID("uid-step")
	step.Labels = map[string]string{v1alpha1.DeferStepOfLabel: podUID}
	step.DeletionTimestamp = &metav1.Time{Time: t0}
	released := deleting(runningPod(), 30)
	released.Name = "db-1"
	released.Finalizers = nil
	f := newFixture(t, step, released, cleanup(), readyNode())

	for _, name := range []string{step.Name, "db-1", "not-there"} {
		f.syncPod(name)
		assert.Empty(t, f.actions(), name)
	}

	err := f.sync("pod/no-name")
	assert.Error(t, err, "a malformed key")
	err = f.sync("widget/ns/x")
	assert.Error(t, err, "an unknown kind")
}

// kubectl stagehand defer release records the release on a running pod: the controller
// does not add the finalizer back (issue 22 item 11).
func TestEnsureFinalizerLeavesAReleasedPod(t *testing.T) {
	released := runningPod()
	released.Finalizers = nil
	released.Annotations = map[string]string{v1alpha1.DeferReleasedAnnotation: "2030-03-01T12:00:00Z"}
	lacking := runningPod()
	lacking.Finalizers = nil

	f := newFixture(t, released, cleanup())
	f.syncPod(podName)
	assert.Empty(t, f.actions(), "a released pod stays without the finalizer")

	f = newFixture(t, lacking, cleanup())
	f.syncPod(podName)
	assert.Equal(t, []string{"update pods db-0"}, f.actions(), "a pod that was never released gets it")
}
