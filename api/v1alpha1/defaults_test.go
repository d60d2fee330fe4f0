package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func newDC(mutate func(*DeploymentConfig)) *DeploymentConfig {
	dc := &DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: DeploymentConfigSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}
	if mutate != nil {
		mutate(dc)
	}
	return dc
}

func TestSetDefaults(t *testing.T) {
	retry := &LifecycleHook{FailurePolicy: LifecycleHookFailurePolicyRetry, ExecNewPod: &ExecNewPodHook{Command: []string{"true"}, ContainerName: "app"}}
	tests := []struct {
		name  string
		in    *DeploymentConfig
		check func(t *testing.T, dc *DeploymentConfig)
	}{
		{
			name: "empty spec gets every default",
			in:   newDC(nil),
			check: func(t *testing.T, dc *DeploymentConfig) {
				s := dc.Spec
				assert.Equal(t, int32(1), *s.Replicas)
				assert.Equal(t, int32(10), *s.RevisionHistoryLimit)
				assert.Equal(t, map[string]string{"app": "web"}, s.Selector.MatchLabels)
				assert.Equal(t, []DeploymentTriggerPolicy{{Type: DeploymentTriggerOnConfigChange}}, s.Triggers)
				assert.Equal(t, DeploymentStrategyTypeRolling, s.Strategy.Type)
				assert.Equal(t, int64(21600), *s.Strategy.ActiveDeadlineSeconds)
				assert.Nil(t, s.Strategy.RecreateParams)
				require.NotNil(t, s.Strategy.RollingParams)
				p := s.Strategy.RollingParams
				assert.Nil(t, p.UpdatePeriodSeconds, "no pause between steps unless asked for")
				assert.Nil(t, p.IntervalSeconds, "progress checks follow the pods' events unless asked otherwise")
				assert.Equal(t, int64(600), *p.TimeoutSeconds)
				assert.Equal(t, intstr.FromString("25%"), *p.MaxSurge)
				assert.Equal(t, intstr.FromString("25%"), *p.MaxUnavailable)
			},
		},
		{
			name: "an empty trigger list stays empty (manual only)",
			in:   newDC(func(dc *DeploymentConfig) { dc.Spec.Triggers = []DeploymentTriggerPolicy{} }),
			check: func(t *testing.T, dc *DeploymentConfig) {
				assert.NotNil(t, dc.Spec.Triggers)
				assert.Empty(t, dc.Spec.Triggers)
			},
		},
		{
			name: "set values are kept",
			in: newDC(func(dc *DeploymentConfig) {
				dc.Spec.Replicas = ptr(int32(0))
				dc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "x"}}
				dc.Spec.Strategy.RollingParams = &RollingDeploymentStrategyParams{MaxSurge: ptr(intstr.FromInt32(0)), TimeoutSeconds: ptr(int64(30))}
			}),
			check: func(t *testing.T, dc *DeploymentConfig) {
				assert.Equal(t, int32(0), *dc.Spec.Replicas, "replicas 0 is a value, not a missing field")
				assert.Equal(t, map[string]string{"tier": "x"}, dc.Spec.Selector.MatchLabels)
				assert.Equal(t, intstr.FromInt32(0), *dc.Spec.Strategy.RollingParams.MaxSurge)
				assert.Equal(t, int64(30), *dc.Spec.Strategy.RollingParams.TimeoutSeconds)
				assert.Equal(t, intstr.FromString("25%"), *dc.Spec.Strategy.RollingParams.MaxUnavailable)
			},
		},
		{
			name: "Recreate gets recreateParams, not rollingParams, and Retry hooks get bounds",
			in: newDC(func(dc *DeploymentConfig) {
				dc.Spec.Strategy.Type = DeploymentStrategyTypeRecreate
				dc.Spec.Strategy.RecreateParams = &RecreateDeploymentStrategyParams{Mid: retry.DeepCopy()}
			}),
			check: func(t *testing.T, dc *DeploymentConfig) {
				assert.Nil(t, dc.Spec.Strategy.RollingParams)
				p := dc.Spec.Strategy.RecreateParams
				assert.Equal(t, int64(600), *p.TimeoutSeconds)
				require.NotNil(t, p.Mid.Retry)
				assert.Equal(t, int32(3), p.Mid.Retry.MaxAttempts)
				assert.Equal(t, RetryBackoff{InitialDelaySeconds: 1, MaxDelaySeconds: 60}, p.Mid.Retry.Backoff)
			},
		},
		{
			name: "Abort hooks get no retry settings",
			in: newDC(func(dc *DeploymentConfig) {
				h := retry.DeepCopy()
				h.FailurePolicy = LifecycleHookFailurePolicyAbort
				dc.Spec.Strategy.RollingParams = &RollingDeploymentStrategyParams{Pre: h}
			}),
			check: func(t *testing.T, dc *DeploymentConfig) {
				assert.Nil(t, dc.Spec.Strategy.RollingParams.Pre.Retry)
			},
		},
		{
			name: "Custom gets no built-in params",
			in: newDC(func(dc *DeploymentConfig) {
				dc.Spec.Strategy.Type = DeploymentStrategyTypeCustom
				dc.Spec.Strategy.CustomParams = &CustomDeploymentStrategyParams{Image: "me/strategy:1"}
			}),
			check: func(t *testing.T, dc *DeploymentConfig) {
				assert.Nil(t, dc.Spec.Strategy.RollingParams)
				assert.Nil(t, dc.Spec.Strategy.RecreateParams)
				assert.Equal(t, int64(0), StrategyTimeoutSeconds(&dc.Spec.Strategy))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetDefaults(tt.in)
			tt.check(t, tt.in)
			again := tt.in.DeepCopy()
			SetDefaults(again)
			assert.Equal(t, tt.in, again, "SetDefaults must be idempotent")
		})
	}
}

func TestStrategyTimeoutSeconds(t *testing.T) {
	dc := newDC(func(dc *DeploymentConfig) {
		dc.Spec.Strategy.Type = DeploymentStrategyTypeRecreate
		dc.Spec.Strategy.RecreateParams = &RecreateDeploymentStrategyParams{TimeoutSeconds: ptr(int64(42))}
	})
	assert.Equal(t, int64(42), StrategyTimeoutSeconds(&dc.Spec.Strategy))
	assert.Equal(t, int64(600), StrategyTimeoutSeconds(&DeploymentStrategy{Type: DeploymentStrategyTypeRolling}), "no params means the default")
}

func TestExecutionHookPhaseIsTerminal(t *testing.T) {
	for p, want := range map[ExecutionHookPhase]bool{"": false, ExecutionHookPending: false,
		ExecutionHookRunning: false, ExecutionHookComplete: true, ExecutionHookFailed: true} {
		if got := p.IsTerminal(); got != want {
			t.Errorf("%q.IsTerminal() = %v, want %v", p, got, want)
		}
	}
}
