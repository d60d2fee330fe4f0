package deployerpod

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// failedWithHook is revision 2 of a Rolling DC with a failed hook, Failed for reason.
func failedWithHook(t *testing.T, reason string) (*v1alpha1.DeploymentConfig, *appsv1.ReplicaSet) {
	t.Helper()
	dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 2), 2)
	dc.Spec.Strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Failed: &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore,
		ExecNewPod:    &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"./migrate", "down"}}}}
	rs := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseFailed, 0)
	rs.Annotations[v1alpha1.StatusReasonAnnotation] = reason + ": it failed"
	return dc, rs
}

// runner is the failure-hook runner pod of rs in phase, created at created.
func runner(t *testing.T, rs *appsv1.ReplicaSet, phase corev1.PodPhase, created time.Time) *corev1.Pod {
	t.Helper()
	pod, _, err := FailureHookPodFor(rs, Defaults{Image: "stagehand/deployer:test"})
	require.NoError(t, err)
	pod.Status.Phase = phase
	pod.CreationTimestamp = metav1.NewTime(created)
	return pod
}

func podCreates(actions []string) int {
	n := 0
	for _, a := range actions {
		if strings.HasPrefix(a, "create pods") {
			n++
		}
	}
	return n
}

func TestFailureHookWaitsForTheDeployerPod(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonCancelled)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, deployerPod(t, rs, corev1.PodRunning))
	require.NoError(t, f.syncRevision("web-2"))
	assert.Zero(t, podCreates(f.Actions()), "a runner beside a deployer pod that may still act: %v", f.Actions())
	state, _ := v1alpha1.FailureHookStateOf(f.GetRS("web-2"))
	assert.Empty(t, state)
}

func TestFailureHookStartsOnceTheDeployerIsGone(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonDeployerPodGone)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	require.NoError(t, f.syncRevision("web-2"))
	assert.Equal(t, 1, podCreates(f.Actions()), "%v", f.Actions())
	pod, err := f.Kube.CoreV1().Pods("ns").Get(t.Context(), "web-2-failure-hook", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web-2", pod.Labels[v1alpha1.FailureHookForLabel])
	assert.Equal(t, "web-2", pod.Labels[v1alpha1.DeployerPodForLabel], "the deployer-pod informer sees it")
	assert.Equal(t, []string{"--failure-hook"}, pod.Spec.Containers[0].Args)
	assert.Equal(t, "stagehand/deployer:test", pod.Spec.Containers[0].Image)
	assert.Equal(t, int64(600+60), *pod.Spec.ActiveDeadlineSeconds, "the strategy's timeout (execNewPod) plus the start slack")
	state, _ := v1alpha1.FailureHookStateOf(f.GetRS("web-2"))
	assert.Equal(t, v1alpha1.FailureHookRunning, state)
	assert.Contains(t, <-f.Events.Events, v1alpha1.EventFailureHookStarted)
}

// A runner that disappears once the revision says Running is never replaced: the hook
// runs at most once.
func TestFailureHookIsNeverRunTwice(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonCancelled)
	rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	require.NoError(t, f.syncRevision("web-2"))
	assert.Zero(t, podCreates(f.Actions()), "%v", f.Actions())
	state, msg := v1alpha1.FailureHookStateOf(f.GetRS("web-2"))
	assert.Equal(t, v1alpha1.FailureHookFailed, state)
	assert.Contains(t, msg, "disappeared before it finished; the hook is not run again")
}

func TestFailureHookOutcome(t *testing.T) {
	tests := []struct {
		name    string
		pod     func(*corev1.Pod) *corev1.Pod
		want    v1alpha1.FailureHookState
		message string
	}{
		{name: "succeeded", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }, want: v1alpha1.FailureHookSucceeded},
		{name: "failed", pod: func(p *corev1.Pod) *corev1.Pod {
			p.Status.Phase = corev1.PodFailed
			return terminated(p, 3, `{"reason":"HookFailed","message":"migrate down: exit 1"}`)
		}, want: v1alpha1.FailureHookFailed, message: "HookFailed: migrate down: exit 1"},
		{name: "past its bound", pod: func(p *corev1.Pod) *corev1.Pod {
			p.Status.Phase, p.CreationTimestamp = corev1.PodRunning, metav1.NewTime(time.Now().Add(-time.Hour))
			return p
		}, want: v1alpha1.FailureHookTimedOut, message: "ran longer than its bound of 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, rs := failedWithHook(t, v1alpha1.ReasonHookFailed)
			rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
			pod := tt.pod(runner(t, rs, "", time.Now()))
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)
			require.NoError(t, f.syncRevision("web-2"))
			state, msg := v1alpha1.FailureHookStateOf(f.GetRS("web-2"))
			assert.Equal(t, tt.want, state)
			assert.Contains(t, msg, tt.message)
			assert.Equal(t, v1alpha1.RevisionPhaseFailed, v1alpha1.RevisionPhase(f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation]),
				"a failure hook never changes the revision's phase")
		})
	}
}

// A running runner within its bound is checked again at the bound.
func TestFailureHookRunningIsRequeuedAtItsBound(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonHookFailed)
	rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, runner(t, rs, corev1.PodRunning, time.Now()))
	err := f.syncRevision("web-2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the failure hook runs")
	assert.Zero(t, podCreates(f.Actions()))
}

// With failedOnSupersede, a superseded revision's failed hook runs before the next
// rollout: the new revision's deployer pod waits, and says what for.
func TestNextRolloutWaitsForASupersededRevisionsFailureHook(t *testing.T) {
	dc, _ := failedWithHook(t, v1alpha1.ReasonSuperseded)
	dc.Spec.Strategy.RollingParams.FailedOnSupersede = true
	rs := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseFailed, 0)
	rs.Annotations[v1alpha1.StatusReasonAnnotation] = v1alpha1.ReasonSuperseded + ": a newer revision"
	rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	dc = controllertest.WithLatest(dc, 3)
	next := controllertest.Revision(t, dc, 3, v1alpha1.RevisionPhaseNew, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, next)

	err := f.syncRevision("web-3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an older revision's failed hook runs")
	assert.Zero(t, podCreates(f.Actions()), "%v", f.Actions())
	assert.Contains(t, f.GetRS("web-3").Annotations[v1alpha1.WaitingAnnotation], "the failed hook of web-2 runs first (pod web-2-failure-hook)")
}

// A runner past its bound is deleted with the hook pod it started.
func TestFailureHookPastItsBoundStopsItsHookPod(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonHookFailed)
	rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	old := runner(t, rs, corev1.PodRunning, time.Now().Add(-time.Hour))
	hook := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2-hook-failed", Namespace: "ns", UID: "uid-hook",
		Labels:          map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2", v1alpha1.HookStageLabel: v1alpha1.FailureHookStage},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}}}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, old, hook)
	require.NoError(t, f.syncRevision("web-2"))
	state, _ := v1alpha1.FailureHookStateOf(f.GetRS("web-2"))
	assert.Equal(t, v1alpha1.FailureHookTimedOut, state)
	for _, name := range []string{"web-2-failure-hook", "web-2-hook-failed"} {
		_, err := f.Kube.CoreV1().Pods("ns").Get(t.Context(), name, metav1.GetOptions{})
		assert.Error(t, err, "%s is deleted", name)
	}
}
