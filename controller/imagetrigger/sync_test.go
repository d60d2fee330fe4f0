package imagetrigger

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
	"github.com/stagehand-dev/stagehand/images"
)

const pinned = "reg.example/app@sha256:1111111111111111111111111111111111111111111111111111111111111111"

func TestPinImageWritesOnlyTheNamedContainers(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	dc.Spec.Template.Spec.Containers = append(dc.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "side:1"})
	dc.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "app:1"}}
	p := &v1alpha1.DeploymentTriggerImageChangeParams{Automatic: true, ContainerNames: []string{"app", "migrate"},
		From: v1alpha1.ImageReference{Image: "reg/app:stable"}}

	pinImage(dc, p, pinned)

	assert.Equal(t, pinned, dc.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, "side:1", dc.Spec.Template.Spec.Containers[1].Image)
	assert.Equal(t, pinned, dc.Spec.Template.Spec.InitContainers[0].Image)
	assert.Equal(t, pinned, p.LastTriggeredImage)
}

func TestTriggerStatus(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	dc.Status.TriggerImages = []v1alpha1.TriggerImageStatus{{From: "reg/app:stable", Image: "reg/app@sha256:old"}}
	tests := []struct {
		name    string
		res     images.Result
		checked bool
		creds   []string
		want    v1alpha1.TriggerImageStatus
	}{
		{name: "not checked yet: what was known", want: v1alpha1.TriggerImageStatus{From: "reg/app:stable", Image: "reg/app@sha256:old"}},
		{name: "resolved", checked: true, res: images.Result{Image: "reg/app@sha256:new"},
			want: v1alpha1.TriggerImageStatus{From: "reg/app:stable", Image: "reg/app@sha256:new"}},
		{name: "failed: the last digest stays, with the error and the secrets that could not be read", checked: true,
			res: images.Result{Err: errors.New("reg/app:stable: UNAUTHORIZED")}, creds: []string{"secret pull: not found"},
			want: v1alpha1.TriggerImageStatus{From: "reg/app:stable", Image: "reg/app@sha256:old",
				Error: "reg/app:stable: UNAUTHORIZED (pull secrets: secret pull: not found)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, triggerStatus(dc, "reg/app:stable", tt.res, tt.checked, tt.creds))
		})
	}
}

func TestImagesResolvedCondition(t *testing.T) {
	tests := []struct {
		name       string
		statuses   []v1alpha1.TriggerImageStatus
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "all resolved", statuses: []v1alpha1.TriggerImageStatus{{From: "a:1", Image: "a@sha256:1"}},
			wantStatus: metav1.ConditionTrue, wantReason: "Resolved", wantMsg: "a:1 is a@sha256:1"},
		{name: "one waits", statuses: []v1alpha1.TriggerImageStatus{{From: "a:1", Image: "a@sha256:1"}, {From: "b:1"}},
			wantStatus: metav1.ConditionUnknown, wantReason: "WaitingForFirstCheck", wantMsg: "waiting for the first check of b:1"},
		{name: "an error wins", statuses: []v1alpha1.TriggerImageStatus{{From: "a:1", Error: "down"}, {From: "b:1"}},
			wantStatus: metav1.ConditionFalse, wantReason: "RegistryError", wantMsg: "cannot resolve a:1: down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := imagesResolvedCondition(3, tt.statuses)
			assert.Equal(t, tt.wantStatus, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			assert.Equal(t, tt.wantMsg, c.Message)
			assert.Equal(t, int64(3), c.ObservedGeneration)
		})
	}
}
