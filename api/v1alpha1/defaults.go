package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults of DESIGN.md §3. The CRD schema applies the same values through
// +kubebuilder:default markers; a test checks that the two agree.
const (
	DefaultReplicas              int32 = 1
	DefaultRevisionHistoryLimit  int32 = 10
	DefaultActiveDeadlineSeconds int64 = 21600
	DefaultTimeoutSeconds        int64 = 600
	DefaultMaxSurge                    = "25%"
	DefaultMaxUnavailable              = "25%"
	DefaultRetryMaxAttempts      int32 = 3
	DefaultRetryInitialDelay     int32 = 1
	DefaultRetryMaxDelay         int32 = 60
)

// SetDefaults fills in every default of a DeploymentConfig, including those that the CRD
// schema cannot apply because they depend on another field:
//   - the selector defaults to the template's labels;
//   - the parameters of the chosen strategy type are created when missing;
//   - a Retry hook without retry settings gets the default attempts and back-off;
//   - an exec hook without pods gets Old in pre, mid and failed hooks, New in post and
//     step hooks.
//
// It is idempotent, and it never overrides a value that is set. The controller and the
// deployer call it on every spec they read, so objects created before a default existed,
// or built by Go code that skipped admission, behave the same.
func SetDefaults(dc *DeploymentConfig) {
	spec := &dc.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr(DefaultReplicas)
	}
	if spec.Selector == nil && len(spec.Template.Labels) > 0 {
		labels := make(map[string]string, len(spec.Template.Labels))
		for k, v := range spec.Template.Labels {
			labels[k] = v
		}
		spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr(DefaultRevisionHistoryLimit)
	}
	if spec.Triggers == nil {
		spec.Triggers = []DeploymentTriggerPolicy{{Type: DeploymentTriggerOnConfigChange}}
	}
	SetStrategyDefaults(&spec.Strategy)
}

// SetStrategyDefaults fills in the defaults of a strategy, creating the parameters of its
// type when they are missing. A custom flow that runs a built-in strategy as a step builds
// a DeploymentStrategy of that type and defaults it the same way.
func SetStrategyDefaults(s *DeploymentStrategy) {
	if s.Type == "" {
		s.Type = DeploymentStrategyTypeRolling
	}
	if s.OnFailure == "" {
		s.OnFailure = OnFailureRollback
	}
	if s.ActiveDeadlineSeconds == nil {
		s.ActiveDeadlineSeconds = ptr(DefaultActiveDeadlineSeconds)
	}
	if s.Type == DeploymentStrategyTypeRecreate && s.RecreateParams == nil {
		s.RecreateParams = &RecreateDeploymentStrategyParams{}
	}
	if s.Type == DeploymentStrategyTypeRolling && s.RollingParams == nil {
		s.RollingParams = &RollingDeploymentStrategyParams{}
	}
	if p := s.RecreateParams; p != nil {
		if p.TimeoutSeconds == nil {
			p.TimeoutSeconds = ptr(DefaultTimeoutSeconds)
		}
		setHookDefaults(p.Pre, ExecHookPodsOld)
		setHookDefaults(p.Mid, ExecHookPodsOld)
		setHookDefaults(p.Post, ExecHookPodsNew)
		setHookDefaults(p.Failed, ExecHookPodsOld)
	}
	if p := s.RollingParams; p != nil {
		if p.TimeoutSeconds == nil {
			p.TimeoutSeconds = ptr(DefaultTimeoutSeconds)
		}
		if p.MaxSurge == nil {
			p.MaxSurge = ptr(intstr.FromString(DefaultMaxSurge))
		}
		if p.MaxUnavailable == nil {
			p.MaxUnavailable = ptr(intstr.FromString(DefaultMaxUnavailable))
		}
		setHookDefaults(p.Pre, ExecHookPodsOld)
		setHookDefaults(p.Post, ExecHookPodsNew)
		setHookDefaults(p.Failed, ExecHookPodsOld)
		for i := range p.Steps {
			setHookDefaults(p.Steps[i].Hook, ExecHookPodsNew)
		}
	}
}

// setHookDefaults defaults a hook: an exec hook without pods runs in pods (which depends
// on where the hook is), a Retry hook without retry settings gets the default attempts and
// back-off.
func setHookDefaults(h *LifecycleHook, pods ExecHookPods) {
	if h == nil {
		return
	}
	if h.Exec != nil && h.Exec.Pods == "" {
		h.Exec.Pods = pods
	}
	if h.FailurePolicy != LifecycleHookFailurePolicyRetry {
		return
	}
	if h.Retry == nil {
		h.Retry = &RetryParams{}
	}
	if h.Retry.MaxAttempts == 0 {
		h.Retry.MaxAttempts = DefaultRetryMaxAttempts
	}
	// A zero back-off is valid when set on purpose, but the schema default applies only
	// to an absent backoff object; here both zero means "not set".
	if h.Retry.Backoff.InitialDelaySeconds == 0 && h.Retry.Backoff.MaxDelaySeconds == 0 {
		h.Retry.Backoff = RetryBackoff{InitialDelaySeconds: DefaultRetryInitialDelay, MaxDelaySeconds: DefaultRetryMaxDelay}
	}
}

// StrategyTimeoutSeconds is the timeout of the strategy's own steps (defaults applied):
// recreateParams or rollingParams timeoutSeconds, or 0 for a Custom strategy, whose only
// bound is activeDeadlineSeconds.
func StrategyTimeoutSeconds(s *DeploymentStrategy) int64 {
	switch {
	case s.Type == DeploymentStrategyTypeRecreate && s.RecreateParams != nil && s.RecreateParams.TimeoutSeconds != nil:
		return *s.RecreateParams.TimeoutSeconds
	case s.Type == DeploymentStrategyTypeRolling && s.RollingParams != nil && s.RollingParams.TimeoutSeconds != nil:
		return *s.RollingParams.TimeoutSeconds
	case s.Type == DeploymentStrategyTypeCustom:
		return 0
	}
	return DefaultTimeoutSeconds
}

func ptr[T any](v T) *T { return &v }
