package rolling

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

func TestStepTarget(t *testing.T) {
	tests := []struct {
		value   intstr.IntOrString
		desired int32
		want    int32
	}{
		{intstr.FromString("20%"), 10, 2},
		{intstr.FromString("50%"), 10, 5},
		{intstr.FromString("25%"), 10, 3}, // rounded up
		{intstr.FromString("95%"), 10, 9}, // below 100% keeps one old replica
		{intstr.FromString("50%"), 1, 0},  // ... even when that leaves nothing new
		{intstr.FromString("100%"), 10, 10},
		{intstr.FromInt32(3), 10, 3},
		{intstr.FromInt32(12), 10, 10}, // spec.replicas was lowered after admission
		{intstr.FromInt32(0), 10, 0},
	}
	for _, tt := range tests {
		got, err := StepTarget(tt.value, tt.desired)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%s of %d", tt.value.String(), tt.desired)
	}
}

// A step moves replicas from old to new within maxSurge and maxUnavailable, and the old
// revision never goes below desired − target: the 10 replicas at 20%.
func TestStepScaling(t *testing.T) {
	s := State{Desired: 10, MaxSurge: 3, MaxUnavailable: 2, OldReplicas: 10, OldAvailable: 10}
	assert.Equal(t, int32(2), StepScaleUp(s, 2), "capped at the step's target, not surge")
	s.NewReplicas = 2
	assert.Equal(t, int32(8), StepScaleDown(s, 2), "old keeps desired − target")
	assert.False(t, StepReached(s, 2), "old still has 10 and new nothing available")
	s.OldReplicas, s.NewAvailable = 8, 2
	assert.True(t, StepReached(s, 2))
	assert.Equal(t, int32(8), StepScaleDown(s, 2), "nothing more goes at this step")

	// At 100% the step functions are the plain loop's
	full := State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 3, OldAvailable: 3, NewReplicas: 2, NewAvailable: 1}
	assert.Equal(t, ScaleUpTarget(full), StepScaleUp(full, 4))
	assert.Equal(t, ScaleDownTarget(full), StepScaleDown(full, 4))

	// A step below the new revision's replicas never scales new down nor old up
	over := State{Desired: 10, MaxSurge: 3, MaxUnavailable: 2, OldReplicas: 5, OldAvailable: 5, NewReplicas: 5, NewAvailable: 5}
	assert.Equal(t, int32(5), StepScaleUp(over, 2))
	assert.Equal(t, int32(5), StepScaleDown(over, 2))
	assert.True(t, StepReached(over, 2))

	// A rollout that starts below desired (old has 2 of 4) raises old at a step, so that
	// the pause holds desired replicas: 1 new (25%) and 3 old
	below := State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 2, OldAvailable: 2}
	assert.Equal(t, int32(1), StepScaleUp(below, 1))
	below.NewReplicas = 1
	assert.Equal(t, int32(3), StepScaleDown(below, 1), "old raised to desired − target")
	below.OldReplicas, below.NewAvailable = 3, 1
	assert.True(t, StepReached(below, 1))
	// ... but never outside the steps: at target = desired old only goes down
	assert.LessOrEqual(t, StepScaleDown(below, 4), below.OldReplicas)
}

// stepRecorder is a StepSignals that records what it is told and resumes at once.
type stepRecorder struct {
	recorded []v1alpha1.StepStatus
	waited   []int
}

func (s *stepRecorder) RecordStep(_ context.Context, _ string, st v1alpha1.StepStatus) error {
	s.recorded = append(s.recorded, st)
	return nil
}

func (s *stepRecorder) WaitResumed(_ context.Context, _ string, step int, _ *time.Time) (bool, error) {
	s.waited = append(s.waited, step)
	return false, nil
}

// hookRecorder is a HookRunner that records the stages it ran.
type hookRecorder struct{ stages []string }

func (h *hookRecorder) Run(_ context.Context, stage string, _ *v1alpha1.LifecycleHook) error {
	h.stages = append(h.stages, stage)
	return nil
}

// A deployer that starts on a revision which records step 2 resumes there: step 1's hook
// does not run again.
func TestStepsResumeAtTheRecordedStep(t *testing.T) {
	hook := &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort}
	params := v1alpha1.RollingDeploymentStrategyParams{Steps: []v1alpha1.RollingStep{
		{Hook: hook}, {Pause: &v1alpha1.PauseStep{}}, {Name: "verify", Hook: hook},
	}}
	to := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "ns", Annotations: map[string]string{
		v1alpha1.StepAnnotation: v1alpha1.FormatStep(v1alpha1.StepStatus{Step: 2, Total: 3, State: v1alpha1.StepPaused}),
	}}}
	clients := strategies.NewKubeClients(fake.NewClientset(to), "ns")
	signals, hooks := &stepRecorder{}, &hookRecorder{}
	r := New(clients, hooks, strategies.NewProgress(io.Discard), params, 0, nil).WithSteps(signals)
	l := &loop{r: r, new: to, state: State{Desired: 4}, target: 4}

	require.NoError(t, l.runSteps(context.Background()))

	assert.Equal(t, []string{"step-3"}, hooks.stages)
	assert.Equal(t, []int{2}, signals.waited)
	require.Len(t, signals.recorded, 3)
	assert.Equal(t, "step 3/3: hook verify running", signals.recorded[1].String())
	assert.Equal(t, v1alpha1.StepsDone, signals.recorded[2].State)
}

// A promote seen before a step skips it and every one after it.
func TestStepsPromoteSkipsTheRest(t *testing.T) {
	hook := &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort}
	params := v1alpha1.RollingDeploymentStrategyParams{Steps: []v1alpha1.RollingStep{{Hook: hook}, {Hook: hook}}}
	to := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "ns",
		Annotations: map[string]string{v1alpha1.PromoteAnnotation: "true"}}}
	signals, hooks := &stepRecorder{}, &hookRecorder{}
	r := New(strategies.NewKubeClients(fake.NewClientset(to), "ns"), hooks, strategies.NewProgress(io.Discard), params, 0, nil).WithSteps(signals)
	l := &loop{r: r, new: to, state: State{Desired: 4}, target: 4}

	require.NoError(t, l.runSteps(context.Background()))

	assert.Empty(t, hooks.stages)
	require.Len(t, signals.recorded, 1)
	assert.Equal(t, v1alpha1.StepsPromoted, signals.recorded[0].State)
}
