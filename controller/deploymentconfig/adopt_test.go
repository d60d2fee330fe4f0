package deploymentconfig

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// An adoption in progress (docs/adopt.md): while it is Pending the controller creates no
// revision; once Ready it creates revision 1 Complete with spec.replicas, which adopts the
// relabelled pods, and no deployer pod is ever due for it.
func TestSyncAdoption(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 3)
	dc.Annotations = map[string]string{v1alpha1.AdoptAnnotation: v1alpha1.AdoptPending}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	require.NoError(t, f.syncDC("web"))
	assert.False(t, slices.Contains(f.Actions(), "create replicasets"), "no revision while Pending: %v", f.Actions())

	dc.Annotations[v1alpha1.AdoptAnnotation] = v1alpha1.AdoptReady
	f = newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	require.NoError(t, f.syncDC("web"))
	rs := f.GetRS("web-1")
	require.NotNil(t, rs)
	assert.Equal(t, string(v1alpha1.RevisionPhaseComplete), rs.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, int32(3), *rs.Spec.Replicas, "created with the pods' count, so it creates none")
	assert.Equal(t, "deployment/web", rs.Annotations[v1alpha1.AdoptedFromAnnotation])
	assert.Contains(t, rs.Annotations[v1alpha1.StatusReasonAnnotation], "adopted from Deployment web")
}
