//go:build e2e

package e2e

// kubectl stagehand rollout status on what OpenShift's own DeploymentConfig fixtures showed:
// a first rollout that waits for its image triggers, and a hook failure followed to the
// end, through the real plugin.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// A DC whose ImageChange trigger names a tag the registry does not have never rolls out;
// status says which trigger of which container it waits for, and what the registry said.
func TestCLIStatusSaysWhichImageTriggerTheFirstRolloutWaitsFor(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	missing := reg.Image(s.NS + "/app:never-pushed")
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{
		{Type: stagehandv1.DeploymentTriggerOnConfigChange},
		imageTrigger(true, missing, "app"),
	}

	// When it is created and the controller has checked the tag
	s.When().Created().Then().DeploymentConfig("ImagesResolved False for the missing tag", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	registryAnswer := triggerStatus(s.Get(), missing).Error
	require.NotEmpty(t, registryAnswer)

	// Then status names the trigger, its container and the registry's answer, and its
	// timeout says what it last saw
	res := plugin(t, s.NS, "rollout", "status", "dc/web", "--timeout=5s")
	t.Logf("%s", res)
	assert.Equal(t, 1, res.ExitCode, "%s", res)
	assert.Contains(t, res.Stdout, "Waiting for the ImageChange trigger of container app ("+missing+") to resolve an image: "+registryAnswer)
	assert.Contains(t, res.Stderr, "(last seen: waiting for image triggers)")
	assert.Equal(t, int64(0), s.Get().Status.LatestVersion, "no rollout of a tag that never resolved")
}

// A pre hook that fails: its lines come before the revision's Failed line.
func TestCLIStatusPrintsTheFailedHookBeforeTheFailure(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 1, framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo checking; exit 3"), nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created()

	res := plugin(t, s.NS, "rollout", "status", "dc/web", "--timeout", "2m")
	t.Logf("%s", res)
	require.Equal(t, 1, res.ExitCode, "%s", res)
	started := strings.Index(res.Stdout, "revision web-1: pre hook web-1-hook-pre started")
	hookFailed := strings.Index(res.Stdout, "revision web-1: pre hook web-1-hook-pre failed")
	revisionFailed := strings.Index(res.Stdout, "revision web-1: Failed")
	require.GreaterOrEqual(t, started, 0, "%s", res)
	assert.Greater(t, hookFailed, started, "%s", res)
	assert.Greater(t, revisionFailed, hookFailed, "%s", res)
}
