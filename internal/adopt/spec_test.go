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
	assert.False(t, dc.Spec.Paused, "the DC starts unpaused, or it could not create revision 1; Plan pauses it after")
	assert.Len(t, warnings, 2, "only the two annotations: %v", warnings)
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

func TestConfigFromMapsLongProgressDeadlinesSoThatTheyAreAdmitted(t *testing.T) {
	tests := []struct {
		name                    string
		progressDeadline        *int32
		timeout, activeDeadline *int64
	}{
		{name: "unset", progressDeadline: nil},
		{name: "below the default deadline", progressDeadline: new(int32(600)), timeout: new(int64(600))},
		{name: "just below", progressDeadline: new(int32(21599)), timeout: new(int64(21599))},
		{name: "the default deadline itself", progressDeadline: new(int32(21600)), timeout: new(int64(21600)), activeDeadline: new(int64(21601))},
		{name: "the largest, read as never", progressDeadline: new(int32(2147483647)), timeout: new(int64(2147483646)), activeDeadline: new(int64(2147483647))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment()
			d.Spec.ProgressDeadlineSeconds = tt.progressDeadline
			dc, _, err := ConfigFrom(d)
			require.NoError(t, err)
			p := dc.Spec.Strategy.RollingParams
			assert.Equal(t, tt.timeout, p.TimeoutSeconds)
			assert.Equal(t, tt.activeDeadline, dc.Spec.Strategy.ActiveDeadlineSeconds)
			if tt.activeDeadline != nil {
				assert.Greater(t, *tt.activeDeadline, *p.TimeoutSeconds, "admission wants the deadline above the timeout")
			}
		})
	}
}
