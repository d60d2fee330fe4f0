package framework

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// NewDeploymentConfig builds a DeploymentConfig of the test app with the given replicas and
// strategy type, VERSION=1 in its environment, and a short termination grace period.
func NewDeploymentConfig(name string, replicas int32, strategy stagehandv1.DeploymentStrategyType) *stagehandv1.DeploymentConfig {
	labels := map[string]string{"app": name}
	return &stagehandv1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: stagehandv1.DeploymentConfigSpec{
			Replicas: ptr.To(replicas),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name:  "app",
						Image: TestImages().TestApp,
						Env:   []corev1.EnvVar{{Name: "VERSION", Value: "1"}},
					}},
				},
			},
			Strategy: stagehandv1.DeploymentStrategy{Type: strategy},
		},
	}
}

// SetVersion sets the VERSION variable of the first container: a template change.
func SetVersion(dc *stagehandv1.DeploymentConfig, version int) {
	c := &dc.Spec.Template.Spec.Containers[0]
	for i := range c.Env {
		if c.Env[i].Name == "VERSION" {
			c.Env[i].Value = strconv.Itoa(version)
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "VERSION", Value: strconv.Itoa(version)})
}

// ShellHook is a hook pod that runs script with /bin/sh in a copy of the "app" container.
func ShellHook(policy stagehandv1.LifecycleHookFailurePolicy, script string) *stagehandv1.LifecycleHook {
	return &stagehandv1.LifecycleHook{
		FailurePolicy: policy,
		ExecNewPod:    &stagehandv1.ExecNewPodHook{ContainerName: "app", Command: []string{"/bin/sh", "-c", script}},
	}
}

// ExampleStrategyImage is the example custom strategy's image, of the test app's tag.
func ExampleStrategyImage() string {
	return "stagehand/example-strategy:" + strings.TrimPrefix(TestImages().TestApp, "stagehand/testapp:")
}
