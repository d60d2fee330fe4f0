package deploymentconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// stagehandActions lists "verb resource[/subresource]" of the DC client's actions.
func (f *fixture) stagehandActions() []string {
	var out []string
	for _, a := range f.Stagehand.Actions() {
		r := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			r += "/" + s
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}

// A settled DC: revision 1 Complete, its deployer pod finished, both in the cache.
func settledFixture(t *testing.T) *fixture {
	t.Helper()
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 2)
	rs1.Status.Replicas, rs1.Status.ReadyReplicas, rs1.Status.AvailableReplicas = 2, 2, 2
	return newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, deployerPod(t, rs1, corev1.PodSucceeded))
}

func TestSyncWritesNoStatusThatChangesNothing(t *testing.T) {
	f := settledFixture(t)
	require.NoError(t, f.syncDC("web"))
	require.Contains(t, f.stagehandActions(), "update deploymentconfigs/status", "the first sync fills the status in")

	f.Cache(f.GetDC("web"))
	f.Stagehand.ClearActions()
	require.NoError(t, f.syncDC("web"))
	assert.Empty(t, f.stagehandActions(), "the status is what the apiserver holds: no write")
	assert.Empty(t, f.Actions(), "nothing to scale, create or read")
}

func TestSyncWaitsForItsOwnStatusWriteInsteadOfConflicting(t *testing.T) {
	f := settledFixture(t)
	require.NoError(t, f.syncDC("web"))
	require.Contains(t, f.stagehandActions(), "update deploymentconfigs/status")

	// The cache has not seen that write yet: a second sync would write the same status
	// again on the old resourceVersion (a conflict). It waits for the write's event.
	f.Stagehand.ClearActions()
	require.NoError(t, f.syncDC("web"))
	assert.Empty(t, f.stagehandActions())
	assert.Empty(t, f.Actions())
}

func TestSyncNewRevisionReadsAFinishedDeployerPodFromTheCache(t *testing.T) {
	f := settledFixture(t)
	dc := f.GetDC("web")
	dc.Spec.Template.Spec.Containers[0].Image = "app:2"
	f.Cache(dc)

	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, []string{"create replicasets"}, f.Actions(),
		"the previous deployer pod finished in the cache: no GET before the new revision")
	assert.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion)
}

func TestSyncNewRevisionWritesItsStatusOnce(t *testing.T) {
	f := settledFixture(t)
	require.NoError(t, f.syncDC("web"))
	dc := f.GetDC("web")
	dc.Spec.Template.Spec.Containers[0].Image = "app:2"
	f.Cache(dc)
	require.NoError(t, f.syncDC("web"))
	require.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion)

	// The caches catch up with the bump and the new ReplicaSet: the status is already
	// the one revision 2, New, gives.
	f.Cache(f.GetDC("web"))
	f.Cache(f.GetRS("web-2"))
	f.Stagehand.ClearActions()
	require.NoError(t, f.syncDC("web"))
	assert.Empty(t, f.stagehandActions(), "no second status write for the same revision")
	got := f.GetDC("web")
	assert.Equal(t, v1alpha1.RevisionPhaseNew, got.Status.Phase)
	p := condition(t, got, v1alpha1.ConditionProgressing)
	assert.Equal(t, v1alpha1.ReasonNewReplicaSetCreated, p.Reason)
}
