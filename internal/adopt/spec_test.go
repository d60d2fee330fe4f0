package adopt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func deployment() *appsv1.Deployment {
	surge, unavailable := intstr.FromInt32(2), intstr.FromString("10%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{
				"deployment.kubernetes.io/revision":                "7",
				"kubectl.kubernetes.io/last-applied-configuration": "{}",
				"example.com/owner":                                "team-a",
			}},
		Spec: appsv1.DeploymentSpec{
			Replicas:                new(int32(4)),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}},
			MinReadySeconds:         5,
			RevisionHistoryLimit:    new(int32(3)),
			ProgressDeadlineSeconds: new(int32(120)),
			Strategy:                appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
		},
	}
}

func TestConfigFromARollingDeployment(t *testing.T) {
	d := deployment()
	dc, warnings, err := ConfigFrom(d)
	require.NoError(t, err)
	assert.Equal(t, "web", dc.Name)
	assert.Equal(t, "shop", dc.Namespace)
	assert.Equal(t, map[string]string{"team": "a"}, dc.Labels)
	assert.Equal(t, map[string]string{"example.com/owner": "team-a"}, dc.Annotations)
	assert.Equal(t, d.Spec.Replicas, dc.Spec.Replicas)
	assert.Equal(t, d.Spec.Selector, dc.Spec.Selector)
	assert.Equal(t, d.Spec.Template, dc.Spec.Template)
	assert.Equal(t, int32(5), dc.Spec.MinReadySeconds)
	assert.Equal(t, new(int32(3)), dc.Spec.RevisionHistoryLimit)
	assert.Equal(t, []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}}, dc.Spec.Triggers)
	require.Equal(t, v1alpha1.DeploymentStrategyTypeRolling, dc.Spec.Strategy.Type)
	p := dc.Spec.Strategy.RollingParams
	assert.Equal(t, intstr.FromInt32(2), *p.MaxSurge)
	assert.Equal(t, intstr.FromString("10%"), *p.MaxUnavailable)
	assert.Equal(t, int64(120), *p.TimeoutSeconds, "progressDeadlineSeconds is the Rolling timeout")
	assert.Len(t, warnings, 2, "the two annotations that are not carried over: %v", warnings)
	assert.Contains(t, warnings[0], "deployment.kubernetes.io/revision")
	assert.Contains(t, warnings[1], "kubectl.kubernetes.io/last-applied-configuration")

	dc.Spec.Template.Labels["app"] = "changed"
	assert.Equal(t, "web", d.Spec.Template.Labels["app"], "nothing is shared with the Deployment")
}

func TestConfigFromARecreateDeployment(t *testing.T) {
	d := deployment()
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	d.Spec.Paused = true
	dc, warnings, err := ConfigFrom(d)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.DeploymentStrategyTypeRecreate, dc.Spec.Strategy.Type)
	assert.Equal(t, int64(120), *dc.Spec.Strategy.RecreateParams.TimeoutSeconds)
	assert.Nil(t, dc.Spec.Strategy.RollingParams)
	assert.False(t, dc.Spec.Paused, "paused is not carried over")
	assert.Contains(t, warnings[len(warnings)-1], "spec.paused is not carried over")
}

func TestConfigFromRefusesWhatADeploymentConfigWouldRefuse(t *testing.T) {
	d := deployment()
	d.Spec.MinReadySeconds = 120
	_, _, err := ConfigFrom(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "minReadySeconds 120 is not below progressDeadlineSeconds 120")

	d = deployment()
	d.Spec.Selector = nil
	_, _, err = ConfigFrom(d)
	assert.Error(t, err)
}
