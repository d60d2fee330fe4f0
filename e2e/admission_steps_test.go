//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// pausedStepsDC is a paused Rolling DC (the controller starts no rollout) with steps.
func pausedStepsDC(name string, replicas int32, steps ...stagehandv1.RollingStep) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig(name, replicas, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Paused = true
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Steps: steps}
	return dc
}

func oldPodsHookStep() stagehandv1.RollingStep {
	return stagehandv1.RollingStep{Hook: &stagehandv1.LifecycleHook{
		FailurePolicy: stagehandv1.LifecycleHookFailurePolicyIgnore,
		Exec:          &stagehandv1.ExecHook{ContainerName: "app", Command: []string{"drain"}, Pods: stagehandv1.ExecHookPodsOld},
	}}
}

// updateDC reads the DC and writes it back changed, again on a conflict with the
// controller's own writes.
func updateDC(ctx context.Context, ns, name string, change func(*stagehandv1.DeploymentConfig)) error {
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(dc)
		_, err = dcs.Update(ctx, dc, metav1.UpdateOptions{})
		return err
	})
}

// kubectl scale and an HPA (the scale subresource), and an edit of spec.replicas alone,
// are admitted whatever the steps say: the deployer caps a step at spec.replicas, and the
// step rules that read spec.replicas run only when the steps themselves change.
func TestAdmissionScaleIgnoresSteps(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	for _, c := range []struct {
		name     string
		dc       *stagehandv1.DeploymentConfig
		scaledTo int32
	}{
		{"below a setReplicas count", pausedStepsDC("count", 5, setReplicasStep(intstr.FromInt32(4))), 2},
		{"to a step's count, with an exec hook in Old pods after it",
			pausedStepsDC("old-hook", 5, setReplicasStep(intstr.FromInt32(3)), oldPodsHookStep()), 3},
		{"until a count is above a later percentage",
			pausedStepsDC("mixed", 10, setReplicasStep(intstr.FromInt32(3)), setReplicasStep(intstr.FromString("50%"))), 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dcs.Create(ctx, c.dc, metav1.CreateOptions{})
			require.NoError(t, err)
			// Again on a conflict with the controller's status writes, as kubectl scale does.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				scale, err := dcs.GetScale(ctx, c.dc.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				scale.Spec.Replicas = c.scaledTo
				_, err = dcs.UpdateScale(ctx, c.dc.Name, scale, metav1.UpdateOptions{})
				return err
			})
			assert.NoError(t, err, "kubectl scale --replicas=%d", c.scaledTo)

			// The same through the main resource, as kubectl edit or apply would send it.
			replicas := c.scaledTo - 1
			err = updateDC(ctx, ns, c.dc.Name, func(dc *stagehandv1.DeploymentConfig) { dc.Spec.Replicas = &replicas })
			assert.NoError(t, err, "an update of spec.replicas alone to %d", replicas)
		})
	}

	// Writing steps that go down is refused on update too, against spec.replicas then.
	err := updateDC(ctx, ns, "mixed", func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Steps = append(dc.Spec.Strategy.RollingParams.Steps, setReplicasStep(intstr.FromInt32(1)))
	})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	assert.Contains(t, err.Error(), "spec.strategy.rollingParams.steps")
	assert.Contains(t, err.Error(), "setReplicas must not go down from one step to a later one")
}

// A pod template whose inline data could never fit the revision's snapshot annotation
// (256 KiB) is refused at admission, naming spec.template; one below the bound is admitted.
func TestAdmissionRefusesOversizedTemplate(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	for _, c := range []struct {
		name    string
		mutate  func(*corev1.PodTemplateSpec)
		refused bool
	}{
		{"a 1 MiB env value", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: "BLOB", Value: strings.Repeat("x", 1<<20)})
		}, true},
		{"args and annotations that add up to more than 128 KiB", func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"example.com/notes": strings.Repeat("n", 64<<10)}
			t.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "app:1", Args: []string{strings.Repeat("a", 65<<10)}}}
		}, true},
		{"a 100 KiB inline script", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Command = []string{"/bin/sh", "-c", strings.Repeat("s", 100<<10)}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dc := framework.NewDeploymentConfig("big", 1, stagehandv1.DeploymentStrategyTypeRolling)
			c.mutate(&dc.Spec.Template)
			_, err := dcs.Create(context.Background(), dc, dryRun)
			if !c.refused {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			var status apierrors.APIStatus
			require.True(t, errors.As(err, &status), "not an API status: %v", err)
			var causes []string
			for _, cause := range status.Status().Details.Causes {
				if cause.Field == "spec.template" && strings.Contains(cause.Message, "the pod template holds more than 131072 (128 KiB) characters") {
					return
				}
				causes = append(causes, cause.Field+": "+cause.Message)
			}
			t.Errorf("no cause names spec.template and the size bound; the causes were:\n  %s", strings.Join(causes, "\n  "))
		})
	}
}
