package revision

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestRequestPending(t *testing.T) {
	dc := &v1alpha1.DeploymentConfig{Status: v1alpha1.DeploymentConfigStatus{LatestVersion: 3}}
	rev := func(phase v1alpha1.RevisionPhase, request string) *appsv1.ReplicaSet {
		a := map[string]string{v1alpha1.PhaseAnnotation: string(phase)}
		if request != "" {
			a[v1alpha1.RequestAnnotation] = request
		}
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	tests := []struct {
		name   string
		req    *v1alpha1.RolloutRequest
		latest *appsv1.ReplicaSet
		want   bool
	}{
		{name: "no request"},
		{name: "latest, not answered", req: &v1alpha1.RolloutRequest{ID: "a", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 3}, want: true},
		{name: "latest, answered by revision 3", req: &v1alpha1.RolloutRequest{ID: "a", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 2}},
		{name: "rollback, not answered", req: &v1alpha1.RolloutRequest{ID: "b", Action: v1alpha1.RolloutRequestRollback, LatestVersion: 3, RollbackTo: 1},
			latest: rev(v1alpha1.RevisionPhaseComplete, ""), want: true},
		{name: "retry of a Failed revision", req: &v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 3},
			latest: rev(v1alpha1.RevisionPhaseFailed, ""), want: true},
		{name: "retry already carried out", req: &v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 3},
			latest: rev(v1alpha1.RevisionPhaseFailed, "r")},
		{name: "retry of a Complete revision", req: &v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 3},
			latest: rev(v1alpha1.RevisionPhaseComplete, "")},
		{name: "retry without the revision", req: &v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 3}},
		{name: "retry of an older revision", req: &v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 2},
			latest: rev(v1alpha1.RevisionPhaseFailed, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RequestPending(tt.req, dc, tt.latest))
		})
	}
}
