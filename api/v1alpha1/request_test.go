package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
