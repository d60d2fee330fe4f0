//go:build e2e

package e2e

// The rollout loop end to end: the shipped controller (deploy/) creates one revision and one
// deployer pod per change; the built-in deployer image carries out Recreate and Rolling.

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	complete = stagehandv1.RevisionPhaseComplete
	failed   = stagehandv1.RevisionPhaseFailed
)

func requireController(t *testing.T) {
	t.Helper()
	requireCluster(t)
	env.WaitForController(t)
}

func TestRolloutFirstRevisionCompletes(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling))

	s.When().Created().
		Then().RevisionPhase(1, complete).RevisionReplicas(1, 4).ReadyPods(4).
		OneDeployerPodPerRevision(1).
		DeploymentConfig("status for revision 1", func(dc *stagehandv1.DeploymentConfig) bool {
			return dc.Status.LatestVersion == 1 && dc.Status.ReadyReplicas == 4 && dc.Status.Phase == complete &&
				meta.IsStatusConditionTrue(dc.Status.Conditions, stagehandv1.ConditionAvailable)
		})

	dc := s.Get()
	progressing := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, progressing)
	assert.Equal(t, stagehandv1.ReasonRolloutComplete, progressing.Reason)
	assert.Equal(t, dc.Generation, dc.Status.ObservedGeneration)
	require.NotNil(t, dc.Status.Details)
	require.NotEmpty(t, dc.Status.Details.Causes)
	assert.Equal(t, stagehandv1.DeploymentCauseConfigChange, dc.Status.Details.Causes[0].Type)
}

func TestRolloutTemplateChangeMakesRevisionTwo(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	s.When().TemplateChanged(2).
		Then().RevisionPhase(2, complete).RevisionReplicas(2, 2).RevisionReplicas(1, 0).ReadyPods(2).
		OneDeployerPodPerRevision(2).
		DeploymentConfig("latestVersion 2 and RolloutComplete", func(dc *stagehandv1.DeploymentConfig) bool {
			c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
			return dc.Status.LatestVersion == 2 && c != nil && c.Reason == stagehandv1.ReasonRolloutComplete
		})

	// The events tell the story of revision 2.
	events, err := env.Kube.CoreV1().Events(s.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var messages []string
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "DeploymentConfig" && ev.InvolvedObject.Name == "web" {
			messages = append(messages, ev.Reason+": "+ev.Message)
		}
	}
	assert.NotEmpty(t, messages, "the DeploymentConfig has no events")
	assert.True(t, containsAny(messages, "web-2"), "no event names revision web-2: %v", messages)
}

func TestRolloutRollingKeepsAvailability(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		MaxSurge:       ptr.To(intstr.FromInt32(1)),
	}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)

	// Given a watcher that sees every pod event from now on
	watcher := env.WatchPods(t, s.NS, "web")
	require.Equal(t, 4, watcher.MinAvailable())

	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(4)

	assert.Greater(t, watcher.Events(), 8, "the watcher must have seen the rollout's pod events")
	assert.GreaterOrEqual(t, watcher.MinAvailable(), 3, "available pods fell below desired − maxUnavailable (4 − 1)")
	revisions, _ := watcher.MaxRevisionsAtOnce()
	assert.Equal(t, 2, revisions, "a rolling rollout runs old and new pods side by side")
}

func TestRolloutRecreateNeverMixesRevisions(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 3, stagehandv1.DeploymentStrategyTypeRecreate))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(3)

	watcher := env.WatchPods(t, s.NS, "web")
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(3).RevisionReplicas(1, 0)

	assert.Greater(t, watcher.Events(), 6, "the watcher must have seen the rollout's pod events")
	revisions, mixed := watcher.MaxRevisionsAtOnce()
	assert.Equal(t, 1, revisions, "Recreate ran pods of two revisions at once: %v", mixed)
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Rolling is event-driven by default (no pause between steps), and explicit
// updatePeriodSeconds and intervalSeconds, OpenShift's pacing, are still honoured.
func TestRollingHonoursAnExplicitUpdatePeriod(t *testing.T) {
	requireController(t)
	paced := framework.NewDeploymentConfig("paced", 4, stagehandv1.DeploymentStrategyTypeRolling)
	paced.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		UpdatePeriodSeconds: ptr.To[int64](2), IntervalSeconds: ptr.To[int64](1)}
	s := env.Given(t).DeploymentConfig(paced)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(4)
	log := deployerLog(t, s.NS, "paced-2")
	assert.Contains(t, log, "Pausing 2s after this step (updatePeriodSeconds)", "the explicit pause is honoured:\n%s", log)

	eager := framework.NewDeploymentConfig("eager", 4, stagehandv1.DeploymentStrategyTypeRolling)
	e := env.Given(t).DeploymentConfig(eager)
	e.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
	e.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(4)
	log = deployerLog(t, e.NS, "eager-2")
	assert.NotContains(t, log, "Pausing", "by default no step pauses:\n%s", log)
	if rp := e.Get().Spec.Strategy.RollingParams; rp != nil {
		assert.Nil(t, rp.UpdatePeriodSeconds, "no default is written into the spec")
	}
}
