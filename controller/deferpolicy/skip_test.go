package deferpolicy

// The runs that are skipped, and the deletions that look forced but are not: every way
// out of a run that does not go through its steps (docs/defer.md).

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestARunWhosePolicyWentIsSkippedAndReleased(t *testing.T) {
	recreated := cleanup()
	recreated.UID = "uid-cleanup-2"
	notSelecting := cleanup()
	notSelecting.Spec.Selector.MatchLabels["app"] = "web"
	fewerSteps := policy("cleanup", v1alpha1.DeferAfterTermination, "db", "flush")
	for _, tc := range []struct {
		name   string
		policy *v1alpha1.DeferPolicy
		want   string
	}{
		{"deleted", nil, "DeferPolicy cleanup was deleted"},
		{"deleted and created again", recreated, "DeferPolicy cleanup was deleted"},
		{"no longer selecting", notSelecting, "no longer selects the pod"},
		{"changed its steps", fewerSteps, "changed its number of steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), inRun(0))
			objs := []runtime.Object{pod, readyNode(), stepPod(t, pod, cleanup(), inRun(0), corev1.PodRunning, 0)}
			if tc.policy != nil {
				objs = append(objs, tc.policy)
			}
			f := newFixture(t, objs...)
			f.syncPod(podName)
			assert.Contains(t, f.actions(), "delete pods db-0-defer-0123abcd-1-1", "the running step is stopped")
			pod = f.pod(podName)
			run := runOf(t, pod)
			assert.Equal(t, v1alpha1.DeferSkipped, run.Outcome)
			assert.Contains(t, run.Message, tc.want)
			assertReleased(t, pod)
		})
	}
}

func TestAPodWhoseNodeIsLostIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want string // "" when the run goes on
	}{
		{"gone", nil, "node node-a is gone"},
		{"not Ready longer than the grace period", node(nodeA, false, t0.Add(-61*time.Second)), "has not been Ready"},
		{"not Ready for less than the grace period", node(nodeA, false, t0.Add(-10*time.Second)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{deleting(runningPod(), 30), cleanup()}
			if tc.node != nil {
				objs = append(objs, tc.node)
			}
			f := newFixture(t, objs...)
			f.syncPod(podName)
			pod := f.pod(podName)
			run := runOf(t, pod)
			assert.Equal(t, "cleanup", run.Policy)
			if tc.want == "" {
				assert.Empty(t, run.Outcome)
				assert.Contains(t, pod.Finalizers, v1alpha1.DeferFinalizer)
				return
			}
			assert.Equal(t, v1alpha1.DeferSkipped, run.Outcome)
			assert.Contains(t, run.Message, tc.want)
			assertReleased(t, pod)
			assert.Equal(t, int64(1), f.policyStatus("cleanup").Skipped)
		})
	}
}

func TestADeletedPodThatNoPolicySelectsIsReleasedAtOnce(t *testing.T) {
	other := policy("web", v1alpha1.DeferAfterTermination, "web", "flush")
	scaleDown := policy("drain", v1alpha1.DeferBeforeScaleDown, "db", "flush")
	f := newFixture(t, deleting(runningPod(), 30), other, scaleDown, readyNode())

	f.syncPod(podName)
	assert.Equal(t, []string{"update pods db-0"}, f.actions(), "one write, while the containers still run")
	pod := f.pod(podName)
	assertReleased(t, pod)
	assert.NotContains(t, pod.Annotations, v1alpha1.DeferRunAnnotation, "no run to record")
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferSkipped), "no AfterTermination DeferPolicy selects the pod")
}

func TestAForcedDeletionOfARunningPodSkipsTheSteps(t *testing.T) {
	f := newFixture(t, deleting(runningPod(), 0), cleanup(), readyNode())

	f.syncPod(podName)
	assert.Equal(t, []string{"update pods db-0"}, f.actions(), "no step pod")
	pod := f.pod(podName)
	assertReleased(t, pod)
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferSkipped), "grace period 0")
}

func TestTwoPoliciesSelectingAPodRunTheFirstByNameAndWarn(t *testing.T) {
	b := policy("b-cleanup", v1alpha1.DeferAfterTermination, "db", "one")
	a := policy("a-cleanup", v1alpha1.DeferAfterTermination, "db", "one", "two", "three")
	f := newFixture(t, deleting(runningPod(), 30), b, a, readyNode())

	f.syncPod(podName)
	run := runOf(t, f.pod(podName))
	assert.Equal(t, "a-cleanup", run.Policy)
	assert.Equal(t, 3, run.Steps)
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferConflict), "b-cleanup")
}

// The apiserver deletes a finished pod (a Job's) at grace period 0: its steps run, and
// the event names the policy.
func TestAPlainDeletionOfASucceededPodRunsTheSteps(t *testing.T) {
	done := ended(runningPod(), corev1.PodSucceeded)
	f := newFixture(t, done, cleanup(), readyNode())
	f.c.podChanged(done, deleting(done, 0))
	f.cache(deleting(done, 0))

	f.syncPod(podName)
	run := runOf(t, f.pod(podName))
	assert.Equal(t, "cleanup", run.Policy)
	assert.Empty(t, run.Outcome, "the run goes on to its steps")
	assert.NotEmpty(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStarted))
}

func TestAForcedDeletionNamesThePolicyInItsEvent(t *testing.T) {
	f := newFixture(t, deleting(runningPod(), 0), cleanup(), readyNode())

	f.syncPod(podName)
	event := eventWith(f.drainEvents(), v1alpha1.EventDeferSkipped)
	assert.Contains(t, event, "DeferPolicy cleanup:")
	assert.NotContains(t, event, "no DeferPolicy")
}
