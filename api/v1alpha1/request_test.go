package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRolloutRequestPendingFor(t *testing.T) {
	dc := &DeploymentConfig{Status: DeploymentConfigStatus{LatestVersion: 3}}
	revision := func(phase RevisionPhase, request string) *appsv1.ReplicaSet {
		a := map[string]string{PhaseAnnotation: string(phase)}
		if request != "" {
			a[RequestAnnotation] = request
		}
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	tests := []struct {
		name   string
		req    *RolloutRequest
		latest *appsv1.ReplicaSet
		want   bool
	}{
		{name: "no request"},
		{name: "latest, not answered", req: &RolloutRequest{ID: "a", Action: RolloutRequestLatest, LatestVersion: 3}, want: true},
		{name: "latest, answered by revision 3", req: &RolloutRequest{ID: "a", Action: RolloutRequestLatest, LatestVersion: 2}},
		{name: "rollback, not answered", req: &RolloutRequest{ID: "b", Action: RolloutRequestRollback, LatestVersion: 3, RollbackTo: 1},
			latest: revision(RevisionPhaseComplete, ""), want: true},
		{name: "retry of a Failed revision", req: &RolloutRequest{ID: "r", Action: RolloutRequestRetry, LatestVersion: 3},
			latest: revision(RevisionPhaseFailed, ""), want: true},
		{name: "retry already carried out", req: &RolloutRequest{ID: "r", Action: RolloutRequestRetry, LatestVersion: 3},
			latest: revision(RevisionPhaseFailed, "r")},
		{name: "retry of a Complete revision", req: &RolloutRequest{ID: "r", Action: RolloutRequestRetry, LatestVersion: 3},
			latest: revision(RevisionPhaseComplete, "")},
		{name: "retry without the revision", req: &RolloutRequest{ID: "r", Action: RolloutRequestRetry, LatestVersion: 3}},
		{name: "retry of an older revision", req: &RolloutRequest{ID: "r", Action: RolloutRequestRetry, LatestVersion: 2},
			latest: revision(RevisionPhaseFailed, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.req.PendingFor(dc, tt.latest))
		})
	}
}

func TestParseRolloutRequest(t *testing.T) {
	dc := &DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	req, err := ParseRolloutRequest(dc)
	require.NoError(t, err)
	assert.Nil(t, req, "no annotation, no request")

	want := &RolloutRequest{ID: "x", Action: RolloutRequestRollback, LatestVersion: 4, RollbackTo: 2}
	dc.Annotations[RolloutRequestAnnotation] = want.Encode()
	req, err = ParseRolloutRequest(dc)
	require.NoError(t, err)
	assert.Equal(t, want, req)

	for value, wantErr := range map[string]string{
		`{`:                                     "is not a rollout request",
		`{"action":"Latest","latestVersion":1}`: "id must not be empty",
		`{"id":"x","action":"Redo","latestVersion":1}`:     `action "Redo" must be Latest, Rollback or Retry`,
		`{"id":"x","action":"Rollback","latestVersion":1}`: "a Rollback needs rollbackTo",
		`{"id":"x","action":"Latest","latestVersion":-1}`:  "latestVersion must not be negative",
	} {
		dc.Annotations[RolloutRequestAnnotation] = value
		_, err := ParseRolloutRequest(dc)
		assert.ErrorContains(t, err, wantErr, value)
	}
}
