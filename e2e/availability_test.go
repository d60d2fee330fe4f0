//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// DESIGN.md §4 invariant 10: a new revision rolls from the pods that serve now, whichever
// revisions they belong to, and the Rolling floor desired − maxUnavailable holds from the
// change to the end of the new rollout. Each test samples the ready pods on a watch.

// floorHeld asserts that every sample of ready between from and to had at least floor
// ready pods in all, and says which sample did not.
func floorHeld(t *testing.T, ready *framework.ReadyTimeline, from, to time.Time, floor int) {
	t.Helper()
	samples := ready.Between(from, to)
	require.NotEmpty(t, samples, "no sample of the ready pods between the change and the end")
	for _, s := range samples {
		total := 0
		for _, n := range s.Ready {
			total += n
		}
		if !assert.GreaterOrEqual(t, total, floor, "ready pods by revision at %s: %v (floor desired − maxUnavailable)", s.At.Format(time.StampMilli), s.Ready) {
			return
		}
	}
	t.Logf("the floor of %d held over %d samples, from %v to %v", floor, len(samples), samples[0].Ready, samples[len(samples)-1].Ready)
}

// withoutSteps is a template change to version that also drops the canary steps, so that
// the new revision rolls out to the end.
func withoutSteps(version int) func(*stagehandv1.DeploymentConfig) {
	return func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, version)
		dc.Spec.Strategy.RollingParams.Steps = nil
	}
}

// A canary paused at 2 of 4 new pods, or at 100%, is superseded: the new revision rolls
// from the canary's pods and the old revision's together, and never drops below 3.
func TestSupersedingAPausedCanaryKeepsTheFloor(t *testing.T) {
	requireController(t)
	for _, tt := range []struct {
		name   string
		step   intstr.IntOrString
		canary int32 // revision 2's replicas at the pause
	}{
		{name: "paused at 2 of 4", step: intstr.FromInt32(2), canary: 2},
		{name: "paused at 100%", step: intstr.FromString("100%"), canary: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := env.Given(t).DeploymentConfig(canaryDC(4, setReplicasStep(tt.step), pauseStep(0)))
			s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
			s.When().TemplateChanged(2)
			waitStep(t, s.NS, 2, 2, stagehandv1.StepPaused)
			s.Then().RevisionReplicas(2, tt.canary).RevisionReplicas(1, 4-tt.canary).ReadyPods(4)
			ready := env.WatchReady(t, s.NS, "web")

			changed := time.Now()
			s.When().Updated(withoutSteps(3)).Then().RevisionPhase(2, failed).RevisionPhase(3, complete).
				RevisionReplicas(3, 4).RevisionReplicas(2, 0).RevisionReplicas(1, 0).ReadyPods(4)

			floorHeld(t, ready, changed, time.Now(), 3)
			assert.Contains(t, deployerLog(t, s.NS, "web-3"), "web-2", "revision 3 rolls from the canary's pods too")
		})
	}
}

// frozenAtPostHook leaves web frozen (onFailure Freeze) with revision 2 serving every pod:
// its post hook failed once revision 1 was at 0.
func frozenAtPostHook(t *testing.T) *framework.Given {
	t.Helper()
	dc := framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.OnFailure = stagehandv1.OnFailureFreeze
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](60)}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams.Post = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo smoke test failed; exit 1")
	}).Then().RevisionPhase(2, failed).
		DeploymentConfig("frozen at web-2", func(dc *stagehandv1.DeploymentConfig) bool { return dc.Status.Frozen == "web-2" }).
		RevisionReplicas(2, 4).RevisionReplicas(1, 0).ReadyPods(4)
	return s
}

// fixForward is the fix forward from frozenAtPostHook: version 3, without the post hook.
func fixForward(dc *stagehandv1.DeploymentConfig) {
	framework.SetVersion(dc, 3)
	dc.Spec.Strategy.RollingParams.Post = nil
}

// The fix forward from a Freeze rolls from the frozen revision's pods, which serve, not
// from revision 1 (the newest Complete one, at 0): with 4 replicas and maxUnavailable 1,
// at least 3 pods stay ready throughout.
func TestFixForwardFromFreezeKeepsTheFloor(t *testing.T) {
	requireController(t)
	s := frozenAtPostHook(t)
	ready := env.WatchReady(t, s.NS, "web")

	changed := time.Now()
	s.When().Updated(fixForward).Then().RevisionPhase(3, complete).
		RevisionReplicas(3, 4).RevisionReplicas(2, 0).RevisionReplicas(1, 0).ReadyPods(4).
		DeploymentConfig("not frozen", func(dc *stagehandv1.DeploymentConfig) bool { return dc.Status.Frozen == "" })

	floorHeld(t, ready, changed, time.Now(), 3)
}

// A canary that starts below desired (spec.replicas raised from 4 to 6 with the template)
// raises the old revision at its step: paused at 1 new pod, the old revision runs 5, so
// the pause holds 6 pods, not 5.
func TestStepsRaiseTheOldRevisionToDesired(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(canaryDC(4, setReplicasStep(intstr.FromInt32(1)), pauseStep(0)))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Replicas = ptr.To[int32](6)
	})
	waitStep(t, s.NS, 2, 2, stagehandv1.StepPaused)
	s.Then().RevisionReplicas(2, 1).RevisionReplicas(1, 5).ReadyPods(6)

	pluginOK(t, s.NS, "rollout", "resume", "dc/web")
	s.Then().RevisionPhase(2, complete).RevisionReplicas(2, 6).RevisionReplicas(1, 0).ReadyPods(6)
}
