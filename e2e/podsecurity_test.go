//go:build e2e

package e2e

// Pod Security: a DeploymentConfig rolls out, hooks included, in a namespace that enforces
// the "restricted" standard. The deployer pod passes it whatever the template says
// (DESIGN.md §5); the application and hook pods pass it because the template does (hook
// pods inherit the template's security contexts).

import (
	"testing"

	"github.com/stretchr/testify/assert"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestPodSecurityRestrictedNamespaceRollsOutWithHooks(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 2,
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook under restricted"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo mid-hook under restricted"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook under restricted"))
	framework.RestrictTemplate(&dc.Spec.Template.Spec)
	s := env.Given(t).DeploymentConfig(dc)
	env.EnforceRestricted(t, s.NS)
	hooks := env.WatchHooks(t, s.NS, "web")

	// When the DeploymentConfig is created in the restricted namespace, then its deployer
	// pod, its three hook pods and its application pods are admitted and the rollout completes.
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2).OneDeployerPodPerRevision(1)
	assert.Equal(t, []string{"pre", "mid", "post"}, hooks.Stages(), "each hook runs once, in order")
	log := deployerLog(t, s.NS, "web-1")
	for _, line := range []string{"pre-hook under restricted", "mid-hook under restricted", "post-hook under restricted"} {
		assert.Contains(t, log, line)
	}
}
