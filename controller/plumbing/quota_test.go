package plumbing

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The apiserver's own messages (ResourceQuota and LimitRanger admission), as a step pod's
// create gets them.
func TestQuotaRefusals(t *testing.T) {
	pods := corev1.Resource("pods")
	forbidden := func(msg string) error { return apierrors.NewForbidden(pods, "db-0-defer-1-1", errors.New(msg)) }
	tests := []struct {
		name                    string
		err                     error
		exceeded, fieldRequired bool
		refused                 bool
		quota                   string
		fields                  []string
	}{
		{name: "exceeded quota", err: forbidden("exceeded quota: compute, requested: limits.cpu=100m, used: limits.cpu=1, limited: limits.cpu=1"),
			exceeded: true, quota: "compute", fields: []string{"limits.cpu"}},
		{name: "exceeded pod count", err: forbidden("exceeded quota: pods-only, requested: pods=1, used: pods=4, limited: pods=4"),
			exceeded: true, quota: "pods-only"},
		{name: "quota requires fields", err: forbidden("failed quota: compute: must specify limits.cpu for: step; requests.memory for: step"),
			fieldRequired: true, refused: true, fields: []string{"limits.cpu", "requests.memory"}},
		{name: "LimitRange maximum", err: forbidden("maximum cpu usage per Container is 50m, but limit is 100m"),
			refused: true, fields: []string{"limits.cpu"}},
		{name: "LimitRange minimum", err: forbidden("minimum memory usage per Container is 32Mi, but request is 16Mi"),
			refused: true, fields: []string{"requests.memory"}},
		{name: "not a refusal", err: errors.New("exceeded quota: compute, must specify limits.cpu")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.exceeded, QuotaExceeded(tt.err), "QuotaExceeded")
			assert.Equal(t, tt.fieldRequired, QuotaFieldRequired(tt.err), "QuotaFieldRequired")
			assert.Equal(t, tt.refused, Refused(tt.err), "Refused")
			assert.Equal(t, tt.quota, ExceededQuotaName(tt.err))
			assert.Equal(t, tt.fields, ResourceFieldsOf(tt.err))
		})
	}
}
