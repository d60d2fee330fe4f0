package deploymentconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func TestStatusPaceWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	p := newStatusPace(2 * time.Second)
	p.now = func() time.Time { return now }
	running := &v1alpha1.DeploymentConfigStatus{LatestVersion: 2, Phase: v1alpha1.RevisionPhaseRunning}
	pending := &v1alpha1.DeploymentConfigStatus{LatestVersion: 2, Phase: v1alpha1.RevisionPhasePending}

	assert.Zero(t, p.wait("ns/web", pending, running), "no write yet in this process: at once")
	p.wrote("ns/web")
	now = now.Add(500 * time.Millisecond)
	assert.Equal(t, 1500*time.Millisecond, p.wait("ns/web", pending, running), "mid-rollout: the rest of the interval")
	assert.Zero(t, p.wait("ns/other", pending, running), "per DC")

	for name, cur := range map[string]*v1alpha1.DeploymentConfigStatus{
		"Complete":          {LatestVersion: 2, Phase: v1alpha1.RevisionPhaseComplete},
		"Failed":            {LatestVersion: 2, Phase: v1alpha1.RevisionPhaseFailed},
		"no revision":       {LatestVersion: 0},
		"frozen":            {LatestVersion: 2, Phase: v1alpha1.RevisionPhaseRunning, Frozen: "web-1"},
		"new latestVersion": {LatestVersion: 3, Phase: v1alpha1.RevisionPhaseNew},
	} {
		assert.Zero(t, p.wait("ns/web", pending, cur), "%s is written at once", name)
	}

	now = now.Add(1500 * time.Millisecond)
	assert.Zero(t, p.wait("ns/web", pending, running), "the interval is over")

	p.forget("ns/web")
	assert.Zero(t, p.wait("ns/web", pending, running))
	off := newStatusPace(0)
	off.wrote("ns/web")
	assert.Zero(t, off.wait("ns/web", pending, running), "interval 0: every change at once")
}

// A rollout in progress: the counts change right after a status write, and that status
// waits for the interval and comes back through the queue; the revision's Complete is
// written at once.
func TestSyncSpacesStatusWritesMidRolloutButNotItsEnd(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 2)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, deployerPod(t, rs1, corev1.PodRunning))
	f.dc.SpaceStatusWrites(300 * time.Millisecond)

	require.NoError(t, f.syncDC("web"))
	require.Contains(t, f.stagehandActions(), "update deploymentconfigs/status", "the first write goes at once")
	f.Cache(f.GetDC("web"))
	for f.dc.queue.Len() > 0 { // the informer events of the fixture's setup
		key, _ := f.dc.queue.Get()
		f.dc.queue.Done(key)
		f.dc.queue.Forget(key)
	}

	rs1.Status.Replicas, rs1.Status.ReadyReplicas = 2, 1
	f.Cache(rs1)
	f.Stagehand.ClearActions()
	require.NoError(t, f.syncDC("web"))
	assert.Empty(t, f.stagehandActions(), "a count mid-rollout waits for the interval")
	assert.Equal(t, int32(0), f.GetDC("web").Status.ReadyReplicas)
	assert.Eventually(t, func() bool { return f.dc.queue.Len() == 1 }, 5*time.Second, 20*time.Millisecond,
		"the queue brings the DC back once the interval is over")
	require.NoError(t, f.syncDC("web"))
	assert.Contains(t, f.stagehandActions(), "update deploymentconfigs/status")
	assert.Equal(t, int32(1), f.GetDC("web").Status.ReadyReplicas, "the write that waited carries the newest status")
	f.Cache(f.GetDC("web"))

	done := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 2)
	done.Status.Replicas, done.Status.ReadyReplicas, done.Status.AvailableReplicas = 2, 2, 2
	f.Cache(done)
	f.Stagehand.ClearActions()
	require.NoError(t, f.syncDC("web"))
	assert.Contains(t, f.stagehandActions(), "update deploymentconfigs/status", "Complete does not wait")
	assert.Equal(t, v1alpha1.RevisionPhaseComplete, f.GetDC("web").Status.Phase)
}
