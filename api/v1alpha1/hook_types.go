package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// LifecycleHookFailurePolicy says what a failed hook does to the rollout.
// +kubebuilder:validation:Enum=Abort;Retry;Ignore
type LifecycleHookFailurePolicy string

const (
	// LifecycleHookFailurePolicyAbort fails the rollout (deployer exit code 3).
	LifecycleHookFailurePolicyAbort LifecycleHookFailurePolicy = "Abort"
	// LifecycleHookFailurePolicyRetry runs the hook again, bounded by retry.maxAttempts and
	// by the strategy's deadline; when the attempts run out it behaves like Abort.
	LifecycleHookFailurePolicyRetry LifecycleHookFailurePolicy = "Retry"
	// LifecycleHookFailurePolicyIgnore records a Warning event and lets the rollout go on.
	LifecycleHookFailurePolicyIgnore LifecycleHookFailurePolicy = "Ignore"
)

// LifecycleHook runs once per rollout at a defined point (pre, mid or post). It has
// exactly one action.
//
// +kubebuilder:validation:XValidation:rule="has(self.execNewPod) != has(self.exec)",message="a hook needs exactly one action: set execNewPod or exec",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="self.failurePolicy == 'Retry' || !has(self.retry)",message="retry is only allowed when failurePolicy is Retry",fieldPath=".retry",reason=FieldValueForbidden
type LifecycleHook struct {
	// FailurePolicy is Abort, Retry or Ignore. Required: there is no safe default.
	// +required
	FailurePolicy LifecycleHookFailurePolicy `json:"failurePolicy"`

	// Retry bounds the attempts of a hook whose failurePolicy is Retry. When it is left
	// out, a Retry hook gets the defaults of RetryParams.
	// +optional
	Retry *RetryParams `json:"retry,omitempty"`

	// ExecNewPod runs the hook in a new pod built from a container of the template.
	// +optional
	ExecNewPod *ExecNewPodHook `json:"execNewPod,omitempty"`

	// Exec runs a command inside the revision's running pods, through an ExecutionHook
	// that the deployer creates, owned by the revision (docs/exec-hooks.md).
	// +optional
	Exec *ExecHook `json:"exec,omitempty"`
}

// ExecHookPods says whose pods an exec hook runs in.
// +kubebuilder:validation:Enum=Old;New;All
type ExecHookPods string

const (
	// ExecHookPodsOld: the pods of the older revisions.
	ExecHookPodsOld ExecHookPods = "Old"
	// ExecHookPodsNew: the pods of the revision being rolled out.
	ExecHookPodsNew ExecHookPods = "New"
	// ExecHookPodsAll: both.
	ExecHookPodsAll ExecHookPods = "All"
)

// ExecHook runs a command in one container of the revision's running pods. A hook that
// finds no running pod (Old pods on a first rollout) is skipped, with an event.
type ExecHook struct {
	// ContainerName names the template container to run in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	ContainerName string `json:"containerName"`

	// Command is the program and its arguments; not run in a shell. The program (the
	// first element) must not be empty.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self[0].trim() != ''",message="the first element is the program to run and must not be empty: set command to the program and its arguments, such as [/bin/sh, -c, ./migrate]",reason=FieldValueInvalid
	// +required
	Command []string `json:"command"`

	// Pods is Old, New or All. Left out, it depends on where the hook is: Old in pre and
	// failed hooks (a failed exec hook is Rolling only), New in post and step hooks.
	// +optional
	Pods ExecHookPods `json:"pods,omitempty"`

	// TimeoutSeconds bounds the hook in each container, retries included (the
	// HookAction's actionTimeoutSeconds). Default 300, at most 3600.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
}

// RetryParams bound a Retry hook. Each attempt is a new pod; the wait between attempts
// grows exponentially from initialDelaySeconds up to maxDelaySeconds.
type RetryParams struct {
	// MaxAttempts is the number of attempts, the first one included. Default 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`

	// Backoff is the wait between attempts.
	// +kubebuilder:default={initialDelaySeconds: 1, maxDelaySeconds: 60}
	// +optional
	Backoff RetryBackoff `json:"backoff,omitempty"`
}

// RetryBackoff is an exponential back-off between hook attempts.
//
// +kubebuilder:validation:XValidation:rule="self.maxDelaySeconds >= self.initialDelaySeconds",message="retry.backoff.maxDelaySeconds must be at least initialDelaySeconds",fieldPath=".maxDelaySeconds",reason=FieldValueInvalid
type RetryBackoff struct {
	// InitialDelaySeconds is the wait before the second attempt. Default 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`

	// MaxDelaySeconds caps the wait between attempts. Default 60.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxDelaySeconds int32 `json:"maxDelaySeconds,omitempty"`
}

// ExecNewPodHook runs a command in a new pod that takes its image, environment, working
// directory, resources, security context and the listed volumes from a template container.
type ExecNewPodHook struct {
	// Command is the hook pod's command. Required; its first element (the program) must
	// not be empty.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self[0].trim() != ''",message="the first element is the program to run and must not be empty: set command to the program and its arguments, such as [/bin/sh, -c, ./migrate]",reason=FieldValueInvalid
	// +required
	Command []string `json:"command"`

	// Args are the command's arguments.
	// +optional
	Args []string `json:"args,omitempty"`

	// Env is added to the template container's environment; on a name clash the hook's
	// value wins. The names follow Kubernetes (1.34 and later): printable ASCII other
	// than '='.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.name.matches('^[ -<>-~]+$'))",message="every name must be 1 to 1024 printable ASCII characters other than =, such as MY_VAR or my.var; rename the variable",reason=FieldValueInvalid
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// ContainerName names the template container whose image and settings the hook uses.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	ContainerName string `json:"containerName"`

	// Volumes names the template volumes (and the container's mounts of them) that the
	// hook pod gets. Other volumes are left out.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Volumes []string `json:"volumes,omitempty"`
}
