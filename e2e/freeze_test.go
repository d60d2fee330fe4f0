//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// revisionReplicas is spec.replicas of every revision of the DC named web in ns.
func revisionReplicas(t *testing.T, ns string) map[string]int32 {
	t.Helper()
	list, err := env.Kube.AppsV1().ReplicaSets(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=web"})
	require.NoError(t, err)
	out := map[string]int32{}
	for _, rs := range list.Items {
		out[rs.Name] = ptr.Deref(rs.Spec.Replicas, 1)
	}
	return out
}

func TestFreezeKeepsBothRevisionsUntilUndo(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.OnFailure = stagehandv1.OnFailureFreeze
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](10)}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
	ready := env.WatchReady(t, s.NS, "web")
	changed := time.Now()

	// When revision 2's pods never become ready, its deployer times out with some of them
	// running (maxSurge 25%) and revision 1 scaled down by maxUnavailable
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		neverReady(dc)
	}).Then().RevisionPhase(2, failed).
		DeploymentConfig("Frozen at web-2", func(dc *stagehandv1.DeploymentConfig) bool {
			c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
			return dc.Status.Frozen == "web-2" && dc.Status.Phase == failed &&
				c != nil && c.Reason == stagehandv1.ReasonRolloutFrozen
		})

	// Then for 30 s no revision is scaled, and both run pods
	frozen := revisionReplicas(t, s.NS)
	t.Logf("replicas when frozen: %v", frozen)
	assert.Positive(t, frozen["web-1"], "revision 1 keeps pods")
	assert.Positive(t, frozen["web-2"], "revision 2 keeps pods")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		require.Equal(t, frozen, revisionReplicas(t, s.NS), "a revision was scaled while frozen")
	}
	got := s.Get()
	assert.Equal(t, "web-2", got.Status.Frozen)
	c := meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "rollout undo")
	warnings := warningEvents(t, s.NS)
	assert.True(t, containsAny(warnings, stagehandv1.EventRolloutFrozen), "no RolloutFrozen event: %v", warnings)

	// When rollout undo runs, then revision 3 (revision 1's template) gets every replica
	// and the DC is no longer frozen
	pluginOK(t, s.NS, "rollout", "undo", "dc/web")
	s.Then().RevisionPhase(3, complete).RevisionReplicas(3, 4).RevisionReplicas(2, 0).RevisionReplicas(1, 0).ReadyPods(4).
		DeploymentConfig("not frozen", func(dc *stagehandv1.DeploymentConfig) bool { return dc.Status.Frozen == "" })

	// From the change through the Freeze and the undo, 3 pods (desired − maxUnavailable) were
	// ready at every moment (DESIGN.md §4 invariant 10)
	floorHeld(t, ready, changed, time.Now(), 3)
}
