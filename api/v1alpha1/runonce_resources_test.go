package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func list(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestWithDefaultResources(t *testing.T) {
	defaults := corev1.ResourceRequirements{Requests: list("cpu", "10m", "memory", "32Mi"), Limits: list("cpu", "500m", "memory", "128Mi")}
	for _, tc := range []struct {
		name string
		set  corev1.ResourceRequirements
		want corev1.ResourceRequirements
	}{
		{"nothing set: the defaults", corev1.ResourceRequirements{}, defaults},
		{"everything set: kept as it is",
			corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi"), Limits: list("cpu", "2", "memory", "2Gi")},
			corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi"), Limits: list("cpu", "2", "memory", "2Gi")}},
		{"a request above the default limit raises the limit",
			corev1.ResourceRequirements{Requests: list("cpu", "2")},
			corev1.ResourceRequirements{Requests: list("cpu", "2", "memory", "32Mi"), Limits: list("cpu", "2", "memory", "128Mi")}},
		{"a limit without a request gets no default request (the apiserver sets it to the limit)",
			corev1.ResourceRequirements{Limits: list("cpu", "5m")},
			corev1.ResourceRequirements{Requests: list("memory", "32Mi"), Limits: list("cpu", "5m", "memory", "128Mi")}},
		{"other resources pass through",
			corev1.ResourceRequirements{Limits: list("ephemeral-storage", "1Gi")},
			corev1.ResourceRequirements{Requests: list("cpu", "10m", "memory", "32Mi"), Limits: list("cpu", "500m", "memory", "128Mi", "ephemeral-storage", "1Gi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := v1alpha1.WithDefaultResources(tc.set, defaults)
			assert.Equal(t, tc.want.Requests, got.Requests)
			assert.Equal(t, tc.want.Limits, got.Limits)
			for name, req := range got.Requests {
				if limit, ok := got.Limits[name]; ok {
					assert.LessOrEqual(t, req.Cmp(limit), 0, "request of %s at most its limit", name)
				}
			}
		})
	}
	assert.Empty(t, v1alpha1.WithDefaultResources(corev1.ResourceRequirements{}, corev1.ResourceRequirements{}).Requests, "no defaults: nothing added")
}
