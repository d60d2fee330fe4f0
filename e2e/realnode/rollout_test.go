//go:build e2e && realnode

package realnode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// TestRealNodeRecreateRunsHookPods rolls a Recreate DC with pre, mid and post hook pods:
// the deployer image and the test app image, pulled from the registry, run every pod.
func TestRealNodeRecreateRunsHookPods(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRecreate)
	dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{
		Pre:  framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook runs as $(id -u)"),
		Mid:  framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo mid-hook migrating"),
		Post: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook done"),
	}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	hooks := env.WatchHooks(t, s.NS, "web")
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(2).OneDeployerPodPerRevision(2)

	require.Equal(t, []string{"pre", "mid", "post"}, hooks.Stages())
	log := logOf(t, s.NS, stagehandv1.DeployerPodName("web-2"))
	for _, line := range []string{"pre-hook runs as 65532", "mid-hook migrating", "post-hook done"} {
		assert.Contains(t, log, line, "the hook's output in kubectl logs web-2-deploy")
	}
	checkRanOnRealNode(t, pods, "web-2-deploy", 3)
}

// TestRealNodeRollingRunsHookPods rolls a Rolling DC with pre and post hook pods.
func TestRealNodeRollingRunsHookPods(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre:  framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook rolling"),
		Post: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook rolling"),
	}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	hooks := env.WatchHooks(t, s.NS, "web")
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(2).OneDeployerPodPerRevision(2)

	require.Equal(t, []string{"pre", "post"}, hooks.Stages())
	log := logOf(t, s.NS, stagehandv1.DeployerPodName("web-2"))
	assert.Contains(t, log, "pre-hook rolling")
	assert.Contains(t, log, "post-hook rolling")
	checkRanOnRealNode(t, pods, "web-2-deploy", 2)
}

// checkRanOnRealNode logs where every pod of the test ran, fails unless all ran on the
// real node from pulled images, checks that the deployer pod ran the pushed deployer image
// (its digest), and that hooks hook pods of the deployer's revision ran there and
// succeeded.
func checkRanOnRealNode(t *testing.T, pods *framework.PodHistory, deployer string, hooks int) {
	t.Helper()
	pods.LogAll(t)
	deployers := pods.Named(deployer)
	require.Len(t, deployers, 1)
	checkRanImage(t, deployers[0], env.RealImage(t, "stagehand/deployer"))
	checkHooksSucceeded(t, pods, deployers[0].Labels[stagehandv1.RevisionLabel], hooks)
}
