package revision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestRetriedAtRoundTrips(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 15, 999, time.FixedZone("CET", 3600))
	retried := rs("web-1", "1", "", map[string]string{v1alpha1.RetriedAtAnnotation: FormatRetriedAt(at)})
	assert.Equal(t, "2026-03-01T11:30:15Z", FormatRetriedAt(at), "UTC, to the second")
	got, ok := RetriedAt(retried)
	assert.True(t, ok)
	assert.True(t, got.Equal(at.Truncate(time.Second)))
	assert.True(t, Retried(retried))

	never := rs("web-2", "2", "", nil)
	_, ok = RetriedAt(never)
	assert.False(t, ok)
	assert.False(t, Retried(never))

	garbled := rs("web-3", "3", "", map[string]string{v1alpha1.RetriedAtAnnotation: "yesterday"})
	_, ok = RetriedAt(garbled)
	assert.False(t, ok, "a value that does not parse gives no time")
	assert.True(t, Retried(garbled), "but the revision was retried")
}

func TestCauseText(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{name: "none", want: ""},
		{name: "config change", annotations: map[string]string{v1alpha1.CauseAnnotation: "ConfigChange"}, want: "ConfigChange"},
		{name: "rollback", annotations: map[string]string{v1alpha1.CauseAnnotation: "Rollback", v1alpha1.RollbackToAnnotation: "2"},
			want: "Rollback to 2"},
		{name: "rollback without its target", annotations: map[string]string{v1alpha1.CauseAnnotation: "Rollback"}, want: "Rollback"},
		{name: "image change", annotations: map[string]string{v1alpha1.CauseAnnotation: "ImageChange",
			v1alpha1.ImageTriggerAnnotation: FormatImageTrigger("reg/app:stable", "reg/app@sha256:abc")}, want: "ImageChange reg/app:stable"},
		{name: "rollback-to on another cause", annotations: map[string]string{v1alpha1.CauseAnnotation: "Manual", v1alpha1.RollbackToAnnotation: "2"},
			want: "Manual"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CauseText(rs("web-1", "1", "", tt.annotations)))
		})
	}
}

func TestDeployerPodAndStatusReasonText(t *testing.T) {
	assert.Equal(t, v1alpha1.DeployerPodName("web-1"), DeployerPod(rs("web-1", "1", "", nil)))
	assert.Equal(t, "custom", DeployerPod(rs("web-1", "1", "", map[string]string{v1alpha1.DeployerPodAnnotation: "custom"})))

	failed := rs("web-1", "1", "", map[string]string{v1alpha1.StatusReasonAnnotation: FormatStatusReason("HookFailed", "pre: exit 1")})
	assert.Equal(t, "HookFailed: pre: exit 1", StatusReasonText(failed))
	assert.Equal(t, "", StatusReasonText(rs("web-2", "2", "", nil)))

	assert.Equal(t, "7", FormatDesiredReplicas(7))
	n, err := DesiredReplicas(rs("web-1", "1", "", map[string]string{v1alpha1.DesiredReplicasAnnotation: FormatDesiredReplicas(0)}))
	assert.NoError(t, err)
	assert.Equal(t, int32(0), n)
}
