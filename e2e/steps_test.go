//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// canaryDC is a 10-replica Rolling DC (maxSurge and maxUnavailable 25%: 3 and 2) with the
// given steps.
func canaryDC(replicas int32, steps ...stagehandv1.RollingStep) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig("web", replicas, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](60), Steps: steps}
	return dc
}

func setReplicasStep(v intstr.IntOrString) stagehandv1.RollingStep {
	return stagehandv1.RollingStep{SetReplicas: &v}
}

func pauseStep(seconds int64) stagehandv1.RollingStep {
	if seconds == 0 {
		return stagehandv1.RollingStep{Pause: &stagehandv1.PauseStep{}}
	}
	return stagehandv1.RollingStep{Pause: &stagehandv1.PauseStep{DurationSeconds: &seconds}}
}

// revisionWeb reads revision n of the DC web.
func revisionWeb(t *testing.T, ns string, n int) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), stagehandv1.RevisionName("web", int64(n)), metav1.GetOptions{})
	require.NoError(t, err)
	return rs
}

// waitStep waits until revision n of web records step with state.
func waitStep(t *testing.T, ns string, n, step int, state stagehandv1.StepState) stagehandv1.StepStatus {
	t.Helper()
	var got stagehandv1.StepStatus
	require.Eventually(t, func() bool {
		rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), stagehandv1.RevisionName("web", int64(n)), metav1.GetOptions{})
		if err != nil {
			return false // not created yet
		}
		var ok bool
		got, ok = stagehandv1.StepOf(rs)
		return ok && got.Step == step && got.State == state
	}, 90*time.Second, 200*time.Millisecond, "revision %d never reached step %d %s (last: %+v)", n, step, state, got)
	return got
}

// The canary: [setReplicas 20%, hook exec in the new pods, pause 5s, setReplicas
// 50%, pause until resumed]. The new revision holds at 2 ready pods while the hook runs
// (once in each), stays at 5 until rollout resume, then completes; availability never
// drops below desired − maxUnavailable.
func TestStepsCanaryHoldsAtEachStepUntilResumed(t *testing.T) {
	requireController(t)
	verify := dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, "", 60, `sleep 2; echo "verified $VERSION"`)
	dc := canaryDC(10, setReplicasStep(intstr.FromString("20%")),
		stagehandv1.RollingStep{Name: "verify-green", Hook: verify}, pauseStep(5),
		setReplicasStep(intstr.FromString("50%")), pauseStep(0))
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(10)
	ready := env.WatchReady(t, s.NS, "web")

	s.When().TemplateChanged(2)
	waitStep(t, s.NS, 2, 5, stagehandv1.StepPaused)
	hooks := executionHooksOf(t, s.NS, 2)
	require.Contains(t, hooks, "web-2-hook-step-2", "the step hook's ExecutionHook: %v", hooks)
	hook := hooks["web-2-hook-step-2"]
	checkEveryPod(t, hook, 2, "verified 2")
	require.NotNil(t, hook.Status.StartTime)
	require.NotNil(t, hook.Status.CompletionTime)
	during := ready.Between(hook.Status.StartTime.Time, hook.Status.CompletionTime.Time)
	require.NotEmpty(t, during)
	for _, sample := range during {
		assert.LessOrEqual(t, sample.Ready["2"], 2, "the new revision went past step 1's 2 pods while the hook ran, at %s", sample.At)
	}
	assert.Equal(t, 2, during[len(during)-1].Ready["2"], "2 new pods ready while the hook ran")

	// Paused at step 5 with 5 new pods: they stay 5 for a while, and get says where it is
	get := pluginOK(t, s.NS, "get", "dc/web")
	assert.Contains(t, get.Stdout, "step 5/5: paused until resumed")
	pausedAt := time.Now()
	time.Sleep(5 * time.Second)
	for _, sample := range ready.Between(pausedAt, time.Now()) {
		assert.Equal(t, 5, sample.Ready["2"], "the new revision moved while paused, at %s", sample.At)
	}
	assert.Equal(t, int32(5), ptr.Deref(revisionWeb(t, s.NS, 2).Spec.Replicas, 0))
	assert.Equal(t, int32(5), ptr.Deref(revisionWeb(t, s.NS, 1).Spec.Replicas, 0))

	// rollout resume lets it complete
	out := pluginOK(t, s.NS, "rollout", "resume", "dc/web")
	assert.Contains(t, out.Stdout, "revision web-2: step 5/5 resumed")
	s.Then().RevisionPhase(2, complete).RevisionReplicas(2, 10).RevisionReplicas(1, 0).ReadyPods(10)
	assert.GreaterOrEqual(t, ready.MinTotal(), 8, "available pods fell below desired − maxUnavailable")
	assert.Contains(t, deployerLog(t, s.NS, "web-2"), "step 5/5: paused until resumed")
}

// A step hook that fails with Abort fails the revision, and the previous one serves every
// replica again.
func TestStepsHookAbortRollsBack(t *testing.T) {
	requireController(t)
	dc := canaryDC(10, setReplicasStep(intstr.FromString("20%")),
		stagehandv1.RollingStep{Hook: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, "", 30, `echo "not green"; exit 1`)},
		setReplicasStep(intstr.FromString("50%")))
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(10)

	s.When().TemplateChanged(2).Then().RevisionPhase(2, failed).
		RevisionReplicas(1, 10).RevisionReplicas(2, 0).ReadyPods(10)
	rs := revisionWeb(t, s.NS, 2)
	assert.Contains(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], "step 2")
	step, ok := stagehandv1.StepOf(rs)
	require.True(t, ok)
	assert.Equal(t, 2, step.Step, "the revision records the step that failed")
}

// rollout promote completes a rollout paused at step 2 of 5: steps 3 to 5 never run.
func TestStepsPromoteCompletesAPausedRollout(t *testing.T) {
	requireController(t)
	dc := canaryDC(4, setReplicasStep(intstr.FromInt32(1)), pauseStep(0),
		setReplicasStep(intstr.FromInt32(2)), pauseStep(0), setReplicasStep(intstr.FromInt32(3)))
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)

	s.When().TemplateChanged(2)
	waitStep(t, s.NS, 2, 2, stagehandv1.StepPaused)
	status := plugin(t, s.NS, "rollout", "status", "dc/web", "--timeout=2s")
	assert.Contains(t, status.Stdout, "step 2/5: paused until resumed")

	out := pluginOK(t, s.NS, "rollout", "promote", "dc/web")
	assert.Contains(t, out.Stdout, "revision web-2 promoted at step 2/5")
	s.Then().RevisionPhase(2, complete).RevisionReplicas(2, 4).RevisionReplicas(1, 0).ReadyPods(4)
	step, ok := stagehandv1.StepOf(revisionWeb(t, s.NS, 2))
	require.True(t, ok)
	assert.Equal(t, stagehandv1.StepsPromoted, step.State)
	assert.Equal(t, 2, step.Step)

	// promote is refused once nothing is in flight
	refused := plugin(t, s.NS, "rollout", "promote", "dc/web")
	assert.NotZero(t, refused.ExitCode, refused.String())
	assert.Contains(t, refused.Stderr, "no rollout of deploymentconfig/web is in progress")
}
