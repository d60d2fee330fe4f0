package revision

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// withSnapshot is a revision of spec in phase, Failed for reason.
func withSnapshot(t *testing.T, spec v1alpha1.DeploymentConfigSpec, phase v1alpha1.RevisionPhase, reason string) *appsv1.ReplicaSet {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Annotations: map[string]string{
		v1alpha1.ConfigSnapshotAnnotation: string(raw),
		v1alpha1.PhaseAnnotation:          string(phase),
		v1alpha1.StatusReasonAnnotation:   reason + ": it failed",
	}}}
}

func TestFailureHookPending(t *testing.T) {
	undo := &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore,
		Exec: &v1alpha1.ExecHook{ContainerName: "app", Command: []string{"undo"}, TimeoutSeconds: new(int64(30))}}
	rolling := func(failed *v1alpha1.LifecycleHook, onSupersede bool) v1alpha1.DeploymentConfigSpec {
		return v1alpha1.DeploymentConfigSpec{Strategy: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
			RollingParams: &v1alpha1.RollingDeploymentStrategyParams{Failed: failed, FailedOnSupersede: onSupersede}}}
	}
	tests := []struct {
		name   string
		rs     *appsv1.ReplicaSet
		state  v1alpha1.FailureHookState
		wanted bool
	}{
		{name: "failed with a hook", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonTimedOut), wanted: true},
		{name: "running hook", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonCancelled), state: v1alpha1.FailureHookRunning, wanted: true},
		{name: "finished hook", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonCancelled), state: v1alpha1.FailureHookTimedOut},
		{name: "no hook", rs: withSnapshot(t, rolling(nil, false), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonTimedOut)},
		{name: "not failed", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseRunning, "")},
		{name: "complete", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseComplete, "")},
		{name: "superseded", rs: withSnapshot(t, rolling(undo, false), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonSuperseded)},
		{name: "superseded, failedOnSupersede", rs: withSnapshot(t, rolling(undo, true), v1alpha1.RevisionPhaseFailed, v1alpha1.ReasonSuperseded), wanted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.state != "" {
				tt.rs.Annotations[v1alpha1.FailureHookAnnotation] = v1alpha1.FormatFailureHook(tt.state, "")
			}
			assert.Equal(t, tt.wanted, FailureHookPending(tt.rs))
		})
	}
	spec := rolling(undo, false)
	assert.Equal(t, 30*time.Second, FailureHookTimeout(&spec), "an exec hook's own timeout")
	spec.Strategy.RollingParams.Failed = &v1alpha1.LifecycleHook{ExecNewPod: &v1alpha1.ExecNewPodHook{}}
	assert.Equal(t, 600*time.Second, FailureHookTimeout(&spec), "an execNewPod hook: the strategy's timeoutSeconds")
	recreate := v1alpha1.DeploymentConfigSpec{Strategy: v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
		RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{Failed: undo}}}
	assert.Same(t, undo, v1alpha1.FailureHookOf(&recreate))
	assert.Equal(t, v1alpha1.ExecHookPodsOld, ExecHookAt(&recreate, v1alpha1.FailureHookStage).Pods, "a failed exec hook defaults to the Old pods")
}
