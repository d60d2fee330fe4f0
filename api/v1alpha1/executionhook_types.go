package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bounds of a HookAction's actionTimeoutSeconds. The design's "retry until deleted"
// for an unset timeout is not offered: a hook always ends.
const (
	DefaultActionTimeoutSeconds = 300
	MaxActionTimeoutSeconds     = 3600
)

// HookAction is a reusable command that ExecutionHooks run inside running containers.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ha,categories=stagehand
// +kubebuilder:printcolumn:name="Timeout",type=integer,JSONPath=`.actionTimeoutSeconds`,description="Seconds from a container's first attempt until the hook gives up in it"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HookAction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Action is what runs in each selected container.
	// +required
	Action Action `json:"action"`

	// ActionTimeoutSeconds bounds a hook's run in each container, counted from that
	// container's first attempt (when it gets one of the hook's parallelism slots, not
	// when the hook starts): failed attempts are retried with exponential back-off until
	// it passes, and a command still running then is stopped. Default 300, at most 3600.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	ActionTimeoutSeconds *int64 `json:"actionTimeoutSeconds,omitempty"`
}

// Action is one kind of action; exec is the only one.
type Action struct {
	// Exec runs a command in the container, as `kubectl exec` does.
	// +required
	Exec *ExecAction `json:"exec"`
}

// ExecAction is a command run in a running container. It is not run in a shell: use
// ["sh", "-c", "..."] for one.
type ExecAction struct {
	// Command is the program and its arguments.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="size(self[0]) > 0",message="must start with a program: the first item is empty",reason=FieldValueInvalid
	// +required
	Command []string `json:"command"`
}

// HookActionList is a list of HookActions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type HookActionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HookAction `json:"items"`
}

// ExecutionHook runs a HookAction once in each selected container of running pods, all
// at once (up to parallelism), and records each container's outcome in its status.
// Delivery is at-least-once: a command may run more than once in a container, so it must
// be idempotent.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=eh;exechook,categories=stagehand
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.actionName`,description="The HookAction run"
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.summary`,description="Containers that succeeded, of those selected"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExecutionHook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects the containers and the action. It cannot change once set.
	// +required
	Spec ExecutionHookSpec `json:"spec"`
	// Status is the run's progress, written by the controller.
	// +optional
	Status ExecutionHookStatus `json:"status,omitempty"`
}

// ExecutionHookSpec says what runs where.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable: create a new ExecutionHook to run the action again",reason=FieldValueForbidden
type ExecutionHookSpec struct {
	// ActionName names a HookAction in the hook's namespace. A missing one fails the hook
	// when it runs, not at admission.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ActionName string `json:"actionName"`

	// PodSelection picks the pods and containers; the set is fixed when the hook starts.
	// +required
	PodSelection PodSelection `json:"podSelection"`

	// Parallelism caps the execs that run at once; unset runs every selected container
	// at once.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`

	// TTLSecondsAfterFinished deletes the hook this long after it finished; unset uses the
	// controller's --execution-hook-ttl.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// PodSelection names pods and containers, in exactly one of two ways.
//
// +kubebuilder:validation:XValidation:rule="has(self.podContainerNamesList) != has(self.podContainerSelector)",message="set exactly one of podContainerNamesList and podContainerSelector",reason=FieldValueInvalid
type PodSelection struct {
	// PodContainerNamesList names pods and, for each, its containers.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=podName
	// +optional
	PodContainerNamesList []PodContainerNames `json:"podContainerNamesList,omitempty"`

	// PodContainerSelector selects pods by label and names their containers.
	// +optional
	PodContainerSelector *PodContainerSelector `json:"podContainerSelector,omitempty"`
}

// PodContainerNames is one pod and the containers of it to run in.
type PodContainerNames struct {
	// PodName is the pod's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	PodName string `json:"podName"`
	// ContainerNames are the containers to run in; empty means every container.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	ContainerNames []string `json:"containerNames,omitempty"`
}

// PodContainerSelector selects pods by label.
//
// +kubebuilder:validation:XValidation:rule="(has(self.podSelector.matchLabels) && size(self.podSelector.matchLabels) > 0) || (has(self.podSelector.matchExpressions) && size(self.podSelector.matchExpressions) > 0)",message="must not be empty (it would select every pod of the namespace): set matchLabels or matchExpressions",fieldPath=".podSelector",reason=FieldValueRequired
type PodContainerSelector struct {
	// PodSelector selects the pods of the hook's namespace. It must not be empty.
	// +required
	PodSelector *metav1.LabelSelector `json:"podSelector"`
	// ContainerList names the containers to run in; empty means every container.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	ContainerList []string `json:"containerList,omitempty"`
}

// ExecutionHookPhase is where a hook's run is.
type ExecutionHookPhase string

const (
	// ExecutionHookPending: not started (the action and the pods not yet resolved).
	ExecutionHookPending ExecutionHookPhase = "Pending"
	// ExecutionHookRunning: some container has not reached its outcome.
	ExecutionHookRunning ExecutionHookPhase = "Running"
	// ExecutionHookComplete: the action succeeded in every selected container.
	ExecutionHookComplete ExecutionHookPhase = "Complete"
	// ExecutionHookFailed: it failed in some container, or nothing could be selected.
	ExecutionHookFailed ExecutionHookPhase = "Failed"
)

// IsTerminal reports whether a hook in this phase has finished (Complete or Failed).
func (p ExecutionHookPhase) IsTerminal() bool {
	return p == ExecutionHookComplete || p == ExecutionHookFailed
}

// The conditions of an ExecutionHook (kubectl wait --for=condition=Complete).
const (
	ExecutionHookConditionComplete = "Complete"
	ExecutionHookConditionFailed   = "Failed"
)

// HookErrorType classifies why a container's run failed.
type HookErrorType string

const (
	// HookErrorTimeout: actionTimeoutSeconds passed while the command ran, and it was
	// stopped (or, without a shell in the container, may still run: see the message).
	HookErrorTimeout HookErrorType = "Timeout"
	// HookErrorError: the command exited non-zero on its last attempt.
	HookErrorError HookErrorType = "Error"
	// HookErrorPodGone: the pod was deleted before the command succeeded.
	HookErrorPodGone HookErrorType = "PodGone"
	// HookErrorPodNotRunning: the pod or the container is not running.
	HookErrorPodNotRunning HookErrorType = "PodNotRunning"
	// HookErrorContainerNotFound: the pod has no such container.
	HookErrorContainerNotFound HookErrorType = "ContainerNotFound"
	// HookErrorForbidden: the controller may not exec in the pod.
	HookErrorForbidden HookErrorType = "Forbidden"
	// HookErrorActionNotFound: the HookAction does not exist (hook-level).
	HookErrorActionNotFound HookErrorType = "ActionNotFound"
	// HookErrorNoPods: the selection matched no pod (hook-level).
	HookErrorNoPods HookErrorType = "NoPodsSelected"
)

// ExecutionHookStatus is the run's progress.
type ExecutionHookStatus struct {
	// Phase is Pending, Running, Complete or Failed.
	// +optional
	Phase ExecutionHookPhase `json:"phase,omitempty"`
	// Summary is "<succeeded>/<selected>", for the printer column.
	// +optional
	Summary string `json:"summary,omitempty"`
	// Command is the HookAction's command when the hook started; a later change of the
	// HookAction does not change a running hook.
	// +optional
	Command []string `json:"command,omitempty"`
	// StartTime is when the hook started: its action and containers were resolved.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// Deadline is StartTime plus the action's timeout: the deadline of a container whose
	// first attempt starts at once. Each container's own deadline, counted from its first
	// attempt, is in its entry; a container that waits for a parallelism slot has a later
	// one.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// CompletionTime is when the last container reached its outcome.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Error is a failure of the hook as a whole (no action, no pods selected).
	// +optional
	Error *HookError `json:"error,omitempty"`
	// HookStatuses has one entry for each selected pod × container.
	// +listType=atomic
	// +optional
	HookStatuses []ContainerExecutionHookStatus `json:"hookStatuses,omitempty"`
	// Conditions are Complete and Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ContainerExecutionHookStatus is the outcome in one container.
type ContainerExecutionHookStatus struct {
	PodName       string `json:"podName"`
	ContainerName string `json:"containerName"`
	// Timestamp is the start of the last attempt.
	// +optional
	Timestamp *metav1.Time `json:"timestamp,omitempty"`
	// Succeed is true once an attempt exited 0, false once the container failed for good,
	// unset while it runs.
	// +optional
	Succeed *bool `json:"succeed,omitempty"`
	// Attempts counts the attempts started, the first one included.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Deadline is this container's first attempt plus the action's timeout, rounded up
	// to the second; unset until the first attempt. No attempt starts after it, and a
	// command still running then is stopped. A controller restart keeps it.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// ExitCode is the last finished attempt's exit code.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// CompletionTime is when the container reached its outcome.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Output is the last lines of the last attempt's output (stdout and stderr), at most
	// 10 lines and 1 KiB, and less in a hook of more than 192 containers: the entries
	// share a budget (EntryTextBounds), so that the status can always be written.
	// +optional
	Output string `json:"output,omitempty"`
	// Error says why the container failed: set with succeed false, and while retrying,
	// the last attempt's failure.
	// +optional
	Error *HookError `json:"error,omitempty"`
}

// HookError is a failure, as the ExecutionHook design has it.
type HookError struct {
	// ErrorType classifies it: Timeout, Error, PodGone, PodNotRunning, ContainerNotFound,
	// Forbidden, ActionNotFound or NoPodsSelected.
	ErrorType HookErrorType `json:"errorType"`
	// Message is for people. In an entry it is cut to its share of the status budget
	// (EntryTextBounds); the ContainerFailed event carries it uncut.
	// +optional
	Message string `json:"message,omitempty"`
	// Reason is a CamelCase word for programs.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Timestamp is when it happened.
	// +optional
	Timestamp *metav1.Time `json:"timestamp,omitempty"`
}

// ExecutionHookList is a list of ExecutionHooks.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ExecutionHookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExecutionHook `json:"items"`
}
