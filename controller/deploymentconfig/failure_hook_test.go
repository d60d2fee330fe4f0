package deploymentconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// The automatic rollback waits for the failed hook of the latest revision: nothing is
// scaled while it is pending, and the status says so; once it has finished, however it
// ended, the rollback goes on.
func TestSyncRollbackWaitsForTheFailureHook(t *testing.T) {
	for _, state := range []v1alpha1.FailureHookState{"", v1alpha1.FailureHookRunning, v1alpha1.FailureHookFailed, v1alpha1.FailureHookSucceeded, v1alpha1.FailureHookNotRun} {
		t.Run("state "+string(state), func(t *testing.T) {
			dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 4), 2)
			dc.Spec.Strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Failed: &v1alpha1.LifecycleHook{
				FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore,
				ExecNewPod:    &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"./migrate", "down"}}}}
			rs1 := controllertest.Revision(t, controllertest.DC("web", "app:1", 4), 1, v1alpha1.RevisionPhaseComplete, 2)
			rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseFailed, 3)
			rs2.Annotations[v1alpha1.StatusReasonAnnotation] = v1alpha1.ReasonTimedOut + ": no progress"
			if state != "" {
				rs2.Annotations[v1alpha1.FailureHookAnnotation] = v1alpha1.FormatFailureHook(state, "")
			}
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2, deployerPod(t, rs2, corev1.PodFailed))

			require.NoError(t, f.syncDC("web"))

			p := condition(t, f.GetDC("web"), v1alpha1.ConditionProgressing)
			if !state.Finished() {
				assert.NotContains(t, f.Actions(), "update replicasets")
				assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas)
				assert.Contains(t, p.Message, "its failed hook runs (pod web-2-failure-hook), and the rollback waits for it")
				return
			}
			assert.Equal(t, int32(4), *f.GetRS("web-1").Spec.Replicas, "rolled back")
			assert.Equal(t, int32(0), *f.GetRS("web-2").Spec.Replicas)
			assert.Contains(t, p.Message, "its failed hook")
		})
	}
}
