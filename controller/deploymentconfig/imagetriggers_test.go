package deploymentconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

const pinned = "reg.example/app@sha256:1111111111111111111111111111111111111111111111111111111111111111"

// withImageTrigger adds an ImageChange trigger on container app for reg.example/app:stable.
func withImageTrigger(dc *v1alpha1.DeploymentConfig, automatic bool, last string, configChange bool) *v1alpha1.DeploymentConfig {
	dc = dc.DeepCopy()
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnImageChange,
		ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{Automatic: automatic, ContainerNames: []string{"app"},
			From: v1alpha1.ImageReference{Image: "reg.example/app:stable"}, LastTriggeredImage: last}}}
	if configChange {
		dc.Spec.Triggers = append(dc.Spec.Triggers, v1alpha1.DeploymentTriggerPolicy{Type: v1alpha1.DeploymentTriggerOnConfigChange})
	}
	if last != "" {
		dc.Spec.Template.Spec.Containers[0].Image = last
	}
	return dc
}

func TestSyncFirstRolloutWaitsForImageTriggers(t *testing.T) {
	tests := []struct {
		name         string
		dc           *v1alpha1.DeploymentConfig
		resolved     string // status.triggerImages[0].image
		wantRevision bool
		wantCause    v1alpha1.DeploymentCauseType
	}{
		{name: "automatic, not resolved yet", dc: withImageTrigger(controllertest.DC("web", "app:1", 1), true, "", true)},
		{name: "automatic, pinned", dc: withImageTrigger(controllertest.DC("web", "app:1", 1), true, pinned, true),
			wantRevision: true, wantCause: v1alpha1.DeploymentCauseConfigChange},
		{name: "automatic, pinned, no ConfigChange trigger", dc: withImageTrigger(controllertest.DC("web", "app:1", 1), true, pinned, false),
			wantRevision: true, wantCause: v1alpha1.DeploymentCauseImageChange},
		{name: "not automatic, not resolved", dc: withImageTrigger(controllertest.DC("web", "app:1", 1), false, "", true)},
		{name: "not automatic, resolved", dc: withImageTrigger(controllertest.DC("web", "app:1", 1), false, "", true), resolved: pinned,
			wantRevision: true, wantCause: v1alpha1.DeploymentCauseConfigChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := tt.dc
			if tt.resolved != "" {
				dc.Status.TriggerImages = []v1alpha1.TriggerImageStatus{{From: "reg.example/app:stable", Image: tt.resolved}}
			}
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
			require.NoError(t, f.syncDC("web"))
			got := f.GetDC("web")
			if !tt.wantRevision {
				assert.Equal(t, int64(0), got.Status.LatestVersion)
				c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
				require.NotNil(t, c)
				assert.Equal(t, v1alpha1.ReasonWaitingForImages, c.Reason)
				assert.Contains(t, c.Message, "waiting for reg.example/app:stable")
				return
			}
			assert.Equal(t, int64(1), got.Status.LatestVersion)
			assert.Equal(t, tt.wantCause, got.Status.Details.Causes[0].Type)
		})
	}
}

func TestSyncImageChangeStartsARevisionWithItsCause(t *testing.T) {
	base := controllertest.WithLatest(withImageTrigger(controllertest.DC("web", "app:1", 2), true, "reg.example/app@sha256:0000", false), 1)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	dc := withImageTrigger(base, true, pinned, false)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

	require.NoError(t, f.syncDC("web"))

	got := f.GetDC("web")
	require.Equal(t, int64(2), got.Status.LatestVersion, "a new digest rolls out even without a ConfigChange trigger")
	cause := got.Status.Details.Causes[0]
	assert.Equal(t, v1alpha1.DeploymentCauseImageChange, cause.Type)
	require.NotNil(t, cause.ImageTrigger)
	assert.Equal(t, "reg.example/app:stable", cause.ImageTrigger.From.Image)
	rs := f.GetRS("web-2")
	assert.Equal(t, "ImageChange", rs.Annotations[v1alpha1.CauseAnnotation])
	assert.Equal(t, "reg.example/app:stable -> "+pinned, rs.Annotations[v1alpha1.ImageTriggerAnnotation])
	assert.Equal(t, pinned, rs.Spec.Template.Spec.Containers[0].Image)
}

func TestSyncOtherTemplateChangesNeedAConfigChangeTrigger(t *testing.T) {
	base := controllertest.WithLatest(withImageTrigger(controllertest.DC("web", "app:1", 2), true, pinned, false), 1)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	dc := base.DeepCopy()
	dc.Spec.Template.Labels["tier"] = "x"
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion, "an image-only config ignores other edits, as OpenShift does")
}
