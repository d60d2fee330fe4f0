package deploymentconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func TestRevisionChangesOfOneDCGatherIntoOneSync(t *testing.T) {
	defer func(d time.Duration) { gatherDelay = d }(gatherDelay)
	gatherDelay = 50 * time.Millisecond
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 1)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})

	f.dc.enqueueOwner(rs)
	f.dc.enqueueConfigOf(deployerPod(t, rs, corev1.PodRunning))
	f.dc.enqueueOwner(rs)
	assert.Zero(t, f.dc.queue.Len(), "a revision's change waits for the others of its window")
	assert.Eventually(t, func() bool { return f.dc.queue.Len() == 1 }, time.Second, 5*time.Millisecond)
	key, _ := f.dc.queue.Get()
	assert.Equal(t, "ns/web", key)
	f.dc.queue.Done(key)
	time.Sleep(2 * gatherDelay)
	assert.Zero(t, f.dc.queue.Len(), "three changes, one sync")

	f.dc.enqueue(dc)
	assert.Equal(t, 1, f.dc.queue.Len(), "a change of the DC itself is not delayed")
}
