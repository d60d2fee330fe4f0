package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DeploymentStrategyType names a rollout strategy.
// +kubebuilder:validation:Enum=Recreate;Rolling;Custom
type DeploymentStrategyType string

const (
	// DeploymentStrategyTypeRecreate stops every old pod before it starts the new ones.
	DeploymentStrategyTypeRecreate DeploymentStrategyType = "Recreate"
	// DeploymentStrategyTypeRolling replaces old pods with new ones a few at a time.
	DeploymentStrategyTypeRolling DeploymentStrategyType = "Rolling"
	// DeploymentStrategyTypeCustom runs the user's own image as the deployer.
	DeploymentStrategyTypeCustom DeploymentStrategyType = "Custom"
)

// OnFailure says what the controller does once the latest revision has Failed.
// +kubebuilder:validation:Enum=Rollback;Freeze
type OnFailure string

const (
	// OnFailureRollback scales the newest Complete revision back to spec.replicas and
	// every other revision to 0: the automatic rollback.
	OnFailureRollback OnFailure = "Rollback"
	// OnFailureFreeze scales nothing: every revision keeps the replicas it has when the
	// rollout fails, until a new revision or a retry moves things on (docs/hooks.md, "Freeze instead of rollback").
	OnFailureFreeze OnFailure = "Freeze"
)

// DeploymentStrategy says how a revision replaces the previous one. The deployer pod and
// the hook pods get its resources, labels and annotations.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'Custom' || (has(self.customParams) && has(self.customParams.image) && size(self.customParams.image) > 0)",message="spec.strategy.customParams.image is required when spec.strategy.type is Custom",fieldPath=".customParams",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="self.type == 'Custom' || !has(self.customParams) || !has(self.customParams.image)",message="is only allowed when type is Custom; with Recreate or Rolling, customParams.command runs in the built-in deployer image",fieldPath=".customParams.image",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!(self.type == 'Rolling' && self.?recreateParams.?mid.hasValue())",message="the Rolling strategy has no mid hook; move the hook to rollingParams.pre or rollingParams.post, or use type Recreate",fieldPath=".recreateParams.mid",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.type != 'Rolling' || !has(self.recreateParams)",message="is not allowed when type is Rolling: use rollingParams",fieldPath=".recreateParams",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.type != 'Recreate' || !has(self.rollingParams)",message="is not allowed when type is Recreate: use recreateParams",fieldPath=".rollingParams",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.type != 'Custom' || !self.?recreateParams.?failed.hasValue()",message="a Custom strategy does not run a failed hook: remove it, and undo a failed rollout in your own deployer image, or use type Recreate or Rolling",fieldPath=".recreateParams.failed",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.type != 'Custom' || !self.?rollingParams.?failed.hasValue()",message="a Custom strategy does not run a failed hook: remove it, and undo a failed rollout in your own deployer image, or use type Recreate or Rolling",fieldPath=".rollingParams.failed",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.activeDeadlineSeconds) || self.activeDeadlineSeconds > (self.type == 'Recreate' ? self.?recreateParams.?timeoutSeconds.orValue(600) : self.type == 'Rolling' ? self.?rollingParams.?timeoutSeconds.orValue(600) : 0)",message="must be greater than the strategy's timeoutSeconds (default 600)",fieldPath=".activeDeadlineSeconds",reason=FieldValueInvalid
type DeploymentStrategy struct {
	// Type is Recreate, Rolling or Custom. Default Rolling.
	// +kubebuilder:default=Rolling
	// +optional
	Type DeploymentStrategyType `json:"type,omitempty"`

	// OnFailure is what happens once the latest revision has Failed: Rollback (the
	// default) scales the newest Complete revision back to spec.replicas and the others to
	// 0; Freeze leaves every revision at the replicas it has, for migrations that cannot be
	// reversed, until a new revision or rollout retry.
	// +kubebuilder:default=Rollback
	// +optional
	OnFailure OnFailure `json:"onFailure,omitempty"`

	// CustomParams holds the settings of a Custom strategy. With Recreate or Rolling, its
	// command and environment decorate the built-in strategy in the built-in image.
	// +optional
	CustomParams *CustomDeploymentStrategyParams `json:"customParams,omitempty"`

	// RecreateParams holds the settings of the Recreate strategy.
	// +optional
	RecreateParams *RecreateDeploymentStrategyParams `json:"recreateParams,omitempty"`

	// RollingParams holds the settings of the Rolling strategy.
	// +optional
	RollingParams *RollingDeploymentStrategyParams `json:"rollingParams,omitempty"`

	// Resources are the compute resources of the deployer pod and the hook pods.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Labels are added to the deployer pod and the hook pods: at most 64, each a valid
	// label (values of at most 63 characters, a bound added by crdpatch).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, (k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))",message="every label key must be valid: a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team",messageExpression="'invalid label key(s) ' + self.filter(k, !(k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))[0] + ': a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team'",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))",message="every label value must be valid: a value is empty, or at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit",messageExpression="'invalid label value(s) for the key(s) ' + self.filter(k, !self[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))[0] + ': a value is empty, or at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit'",reason=FieldValueInvalid
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the deployer pod and the hook pods: at most 64, each key a
	// qualified name.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, (k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))",message="every annotation key must be valid: a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team",messageExpression="'invalid annotation key(s) ' + self.filter(k, !(k.size() <= 317 && k.indexOf('/') <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')))[0] + ': a key is an optional DNS subdomain prefix and /, then a name of at most 63 letters, digits, dashes, underscores or dots that starts and ends with a letter or digit, such as team or example.com/team'",reason=FieldValueInvalid
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// ActiveDeadlineSeconds bounds the whole rollout, hooks included: it is the deployer
	// pod's activeDeadlineSeconds. It must be greater than the strategy's timeoutSeconds.
	// Default 21600 (6 hours). At most 2147483647, the bound of a pod's
	// activeDeadlineSeconds.
	// +kubebuilder:default=21600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// CustomDeploymentStrategyParams are the settings of a Custom strategy.
type CustomDeploymentStrategyParams struct {
	// Image is the deployer image for type Custom. It receives the deployer pod contract
	// (docs/deployer-contract.md). Not allowed with Recreate or Rolling.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self == self.trim()",message="must not be blank or have leading or trailing whitespace: set an image reference such as registry.example.com/team/deployer:1",reason=FieldValueInvalid
	// +optional
	Image string `json:"image,omitempty"`

	// Command overrides the deployer image's entrypoint.
	// +optional
	Command []string `json:"command,omitempty"`

	// Environment is added to the deployer container's environment. The names follow
	// Kubernetes (1.34 and later): printable ASCII other than '='.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.name.matches('^[ -<>-~]+$'))",message="every name must be 1 to 1024 printable ASCII characters other than =, such as MY_VAR or my.var; rename the variable",reason=FieldValueInvalid
	// +optional
	Environment []corev1.EnvVar `json:"environment,omitempty"`
}

// RecreateDeploymentStrategyParams are the settings of the Recreate strategy.
//
// +kubebuilder:validation:XValidation:rule="!self.?pre.?exec.hasValue() || self.pre.exec.?pods.orValue('Old') == 'Old'",message="must be Old in a pre hook: the new revision has no pods yet",fieldPath=".pre.exec.pods",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.?mid.?exec.hasValue()",message="an exec hook cannot run at mid: the old pods are gone and the new ones not started; use execNewPod, or an exec hook at pre or post",fieldPath=".mid.exec",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?post.?exec.hasValue() || self.post.exec.?pods.orValue('New') == 'New'",message="must be New in a post hook: the old revisions' pods are gone by then",fieldPath=".post.exec.pods",reason=FieldValueInvalid
type RecreateDeploymentStrategyParams struct {
	// TimeoutSeconds is how long the deployer waits for the old pods to go and for all new
	// pods to be available, each time. Default 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`

	// Pre runs before anything is scaled.
	// +optional
	Pre *LifecycleHook `json:"pre,omitempty"`

	// Mid runs after the old pods are gone and before the first new pod starts.
	// +optional
	Mid *LifecycleHook `json:"mid,omitempty"`

	// Post runs after every new pod is available.
	// +optional
	Post *LifecycleHook `json:"post,omitempty"`

	// Failed runs once when the revision ends Failed, before the previous revision is
	// scaled back up (docs/hooks.md, "The failure hook"). It must be an execNewPod hook:
	// the old pods are stopped before the new ones start, so an exec hook would mostly
	// find none. Not allowed with a Custom strategy, which does not run it.
	// +optional
	Failed *LifecycleHook `json:"failed,omitempty"`

	// FailedOnSupersede also runs the failed hook when a newer revision supersedes this one
	// mid-rollout. Default false: a superseded revision is followed by the newer one's
	// rollout, not by a rollback.
	// +optional
	FailedOnSupersede bool `json:"failedOnSupersede,omitempty"`
}

// RollingDeploymentStrategyParams are the settings of the Rolling strategy.
//
// +kubebuilder:validation:XValidation:rule="!self.?pre.?exec.hasValue() || self.pre.exec.?pods.orValue('Old') == 'Old'",message="must be Old in a pre hook: the new revision has no pods yet",fieldPath=".pre.exec.pods",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.?post.?exec.hasValue() || self.post.exec.?pods.orValue('New') == 'New'",message="must be New in a post hook: the old revisions' pods are gone by then",fieldPath=".post.exec.pods",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!(has(self.maxSurge) && has(self.maxUnavailable) && (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%') && (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%'))",message="spec.strategy.rollingParams: maxSurge and maxUnavailable must not both be 0, or the rollout could never make progress",fieldPath=".maxUnavailable",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!self.?failed.?exec.hasValue() || self.failed.exec.?pods.orValue('Old') == 'Old'",message="must be Old in a failed hook: it runs before the old revision serves again; use execNewPod to run elsewhere",fieldPath=".failed.exec.pods",reason=FieldValueInvalid
type RollingDeploymentStrategyParams struct {
	// UpdatePeriodSeconds is a pause after each scaling step. Unset or 0: no pause, the
	// next step comes as soon as the pods allow it (OpenShift's default of 1 s paced every
	// step; set it to keep that pacing).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	UpdatePeriodSeconds *int64 `json:"updatePeriodSeconds,omitempty"`

	// IntervalSeconds is the shortest gap between two checks of the rollout's progress.
	// Unset or 0: the checks follow the pods' events (OpenShift polls every second).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	IntervalSeconds *int64 `json:"intervalSeconds,omitempty"`

	// TimeoutSeconds is the progress deadline: the rollout fails when no pod becomes
	// available for this long. It resets whenever the rollout makes progress. Default 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`

	// MaxUnavailable is how many pods (an integer, or a percentage of replicas rounded
	// down) may be unavailable during the rollout. Default 25%.
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnavailable must be a non-negative integer or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many pods (an integer, or a percentage of replicas rounded up) may
	// run above the desired count during the rollout. Default 25%.
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxSurge must be a non-negative integer or a percentage from 0% to 100%"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Pre runs before anything is scaled.
	// +optional
	Pre *LifecycleHook `json:"pre,omitempty"`

	// Post runs after every new pod is available.
	// +optional
	Post *LifecycleHook `json:"post,omitempty"`

	// Steps, when set, move the rollout through a list of steps in order: setReplicas,
	// pause and hook (docs/hooks.md, "Steps"). After the last step the rollout completes
	// to 100%. Without steps, Rolling goes straight to 100%. The first revision of a DC
	// (no old one) ignores the steps.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Steps []RollingStep `json:"steps,omitempty"`

	// Failed runs once when the revision ends Failed, before the previous revision is
	// scaled back up (docs/hooks.md, "The failure hook"). An exec hook runs in the old
	// revision's pods. Not allowed with a Custom strategy, which does not run it.
	// +optional
	Failed *LifecycleHook `json:"failed,omitempty"`

	// FailedOnSupersede also runs the failed hook when a newer revision supersedes this one
	// mid-rollout. Default false: a superseded revision is followed by the newer one's
	// rollout, not by a rollback.
	// +optional
	FailedOnSupersede bool `json:"failedOnSupersede,omitempty"`
}

// RollingStep is one step of a Rolling rollout: exactly one of setReplicas, pause or hook.
//
// +kubebuilder:validation:XValidation:rule="[has(self.setReplicas), has(self.pause), has(self.hook)].filter(x, x).size() == 1",message="a step needs exactly one of setReplicas, pause or hook",reason=FieldValueInvalid
type RollingStep struct {
	// Name names the step in the revision's status, events and the plugin's output.
	// Default step-<N>, N counted from 1. A hook step's pods are <revision>-hook-step-<N>
	// whatever its name.
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`

	// SetReplicas is the new revision's replicas at the end of the step: a count (at most
	// spec.replicas: a larger one counts as spec.replicas), or a percentage of
	// spec.replicas rounded up. A percentage below 100% always leaves the old revision at
	// least one replica. The old revision goes down as far as maxSurge and maxUnavailable
	// allow, never below spec.replicas minus this count. A later setReplicas step must not
	// be lower than an earlier one.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="setReplicas must be a count of 0 or more or a percentage from 0% to 100%, such as 3 or 20%"
	// +optional
	SetReplicas *intstr.IntOrString `json:"setReplicas,omitempty"`

	// Pause holds the rollout: for durationSeconds, or until kubectl stagehand rollout
	// resume (or promote) when durationSeconds is left out. A pause does not count
	// against timeoutSeconds.
	// +optional
	Pause *PauseStep `json:"pause,omitempty"`

	// Hook runs a lifecycle hook: execNewPod, or exec (in the new revision's ready pods
	// when pods is left out). Its failurePolicy applies: Abort fails the revision.
	// +optional
	Hook *LifecycleHook `json:"hook,omitempty"`
}

// PauseStep holds a Rolling rollout between two steps.
type PauseStep struct {
	// DurationSeconds is how long the pause lasts. Left out: until kubectl stagehand
	// rollout resume or rollout promote.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	DurationSeconds *int64 `json:"durationSeconds,omitempty"`
}
