package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bounds of a DeferPolicy's gracePeriodSeconds, which bounds the whole sequence of
// steps for one pod.
const (
	DefaultDeferGracePeriodSeconds = 300
	MaxDeferGracePeriodSeconds     = 3600
	// MaxDeferSteps bounds a policy's steps.
	MaxDeferSteps = 16
)

// DeferFinalizer is on every pod that an AfterTermination DeferPolicy selects, from its
// creation. The controller removes it once the steps have run, or once it knows they
// cannot.
const DeferFinalizer = GroupName + "/defer"

// Annotations on a pod with a defer run.
const (
	// DeferProgressAnnotation is "<finished steps>/<steps>", for people and the plugin.
	DeferProgressAnnotation = GroupName + "/defer-progress"
	// DeferRunAnnotation is the run's record (DeferRun as JSON), from which a restarted
	// controller resumes.
	DeferRunAnnotation = GroupName + "/defer-run"
	// DeferScaleDownAnnotation marks a pod chosen for a scale-down: the steps of the
	// BeforeScaleDown policy run while it still runs. It holds "<ReplicaSet>/<replicas
	// asked for>".
	DeferScaleDownAnnotation = GroupName + "/defer-scale-down"
	// DeferScaleDownToAnnotation on a ReplicaSet asks the controller to lower its
	// replicas to this number once the BeforeScaleDown steps of the pods that go have
	// run. The deployer and the DeploymentConfig controller write it instead of lowering
	// the replicas themselves.
	DeferScaleDownToAnnotation = GroupName + "/defer-scale-down-to"
	// DeferReleasedAnnotation on a pod records that someone removed the finalizer on
	// purpose (kubectl stagehand defer release), with the time: the controller does not
	// add the finalizer back to that pod.
	DeferReleasedAnnotation = GroupName + "/defer-released"
	// PodDeletionCostAnnotation is the ReplicaSet controller's hint: of two otherwise
	// equal pods, the one with the lower cost is removed first.
	PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
)

// Labels on a defer step's pod.
const (
	// DeferStepOfLabel holds the UID of the pod the step runs for.
	DeferStepOfLabel = GroupName + "/defer-step-of"
	// DeferStepLabel holds the step's index, from 1.
	DeferStepLabel = GroupName + "/defer-step"
	// DeferPolicyLabel holds the name of the DeferPolicy whose step the pod runs.
	DeferPolicyLabel = GroupName + "/defer-policy"
	// DeferStepForAnnotation holds the name of the pod the step runs for.
	DeferStepForAnnotation = GroupName + "/defer-step-for"
	// DeferStepContainer is the name of a step pod's one container.
	DeferStepContainer = "step"
)

// DeferPolicy runs clean-up steps, as pods on the same node with the same volumes, for
// the pods it selects: after they terminate, or before Stagehand scales them down.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dp;defer,categories=stagehand
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name: must be at most 63 characters: it is a label value on the step pods",reason=FieldValueInvalid
// +kubebuilder:printcolumn:name="When",type=string,JSONPath=`.spec.when`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.steps`,description="Steps run for each pod"
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.podsMatched`,description="Pods the selector selects now"
// +kubebuilder:printcolumn:name="InProgress",type=integer,JSONPath=`.status.inProgress`,description="Pods whose steps run now"
// +kubebuilder:printcolumn:name="Completed",type=integer,JSONPath=`.status.completed`,description="Runs whose steps all succeeded"
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`,description="Runs with a failed step"
// +kubebuilder:printcolumn:name="TimedOut",type=integer,JSONPath=`.status.timedOut`,description="Runs stopped at gracePeriodSeconds"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeferPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects the pods and says what runs for them.
	// +required
	Spec DeferPolicySpec `json:"spec"`
	// Status counts the policy's pods and runs, written by the controller.
	// +optional
	Status DeferPolicyStatus `json:"status,omitempty"`
}

// DeferWhen is when a policy's steps run.
//
// +kubebuilder:validation:Enum=AfterTermination;BeforeScaleDown;BeforeEviction
type DeferWhen string

const (
	// DeferAfterTermination: once a selected pod is deleted and its containers have
	// stopped; the pod stays Terminating (a finalizer) until the steps end.
	DeferAfterTermination DeferWhen = "AfterTermination"
	// DeferBeforeScaleDown: when Stagehand lowers a ReplicaSet's replicas, for the pods
	// that will go, while they still run.
	DeferBeforeScaleDown DeferWhen = "BeforeScaleDown"
	// DeferBeforeEviction: when an EvictionRequest (lifecycle.k8s.io/v1alpha1) targets a
	// selected pod, while it still runs; the eviction goes on once the steps end
	// (docs/defer.md, "BeforeEviction").
	DeferBeforeEviction DeferWhen = "BeforeEviction"
)

// DeferEvictionFailurePolicy is what a BeforeEviction run that did not succeed does to
// its eviction.
//
// +kubebuilder:validation:Enum=Block;Evict
type DeferEvictionFailurePolicy string

const (
	// DeferEvictionBlock stops the eviction: the pod keeps running, and the
	// EvictionRequest is Failed with the run's message. The default.
	DeferEvictionBlock DeferEvictionFailurePolicy = "Block"
	// DeferEvictionEvict lets the eviction go on, PodDisruptionBudgets included.
	DeferEvictionEvict DeferEvictionFailurePolicy = "Evict"
)

// DeferRestartPolicy is what happens when a step fails.
//
// +kubebuilder:validation:Enum=Never;OnFailure
type DeferRestartPolicy string

const (
	// DeferRestartNever records the failure and moves on to the next step.
	DeferRestartNever DeferRestartPolicy = "Never"
	// DeferRestartOnFailure runs the step again, with back-off, until it succeeds or the
	// grace period ends.
	DeferRestartOnFailure DeferRestartPolicy = "OnFailure"
)

// DeferPolicySpec is what a DeferPolicy does.
//
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, self.steps.exists_one(t, t.name == s.name))",message="step names must be unique",fieldPath=".steps",reason=FieldValueDuplicate
// +kubebuilder:validation:XValidation:rule="!has(self.evictionFailurePolicy) || self.when == 'BeforeEviction'",message="evictionFailurePolicy applies only to when: BeforeEviction: remove it, or set when to BeforeEviction",fieldPath=".evictionFailurePolicy",reason=FieldValueForbidden
type DeferPolicySpec struct {
	// Selector selects pods of the policy's namespace by label. It must not be empty.
	// Stagehand's deployer, hook and step pods are never selected.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="must not be empty (it would select every pod of the namespace): set matchLabels or matchExpressions",reason=FieldValueRequired
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// Steps run one after another, in order, each as a pod on the selected pod's node.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +required
	Steps []DeferStep `json:"steps"`

	// RestartPolicy says what a failed step does: Never moves on to the next step,
	// OnFailure runs it again with back-off. A step may override it. Default Never.
	// +kubebuilder:default=Never
	// +optional
	RestartPolicy DeferRestartPolicy `json:"restartPolicy,omitempty"`

	// GracePeriodSeconds bounds the whole sequence for one pod, from the first step's
	// start: the running step is then stopped and the rest is skipped. Default 300, at
	// most 3600.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`

	// When is AfterTermination (default), BeforeScaleDown or BeforeEviction.
	// +kubebuilder:default=AfterTermination
	// +optional
	When DeferWhen `json:"when,omitempty"`

	// EvictionFailurePolicy, for BeforeEviction only, says what a run whose steps did not
	// all succeed does to the eviction: Block (default) keeps the pod running and fails
	// the EvictionRequest with the run's message; Evict lets the eviction go on.
	// +optional
	EvictionFailurePolicy DeferEvictionFailurePolicy `json:"evictionFailurePolicy,omitempty"`
}

// DeferStep is one container run for a pod.
type DeferStep struct {
	// Name names the step in events, in the progress and in the step's pod name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Image is the step's container image.
	// +kubebuilder:validation:MinLength=1
	// +required
	Image string `json:"image"`
	// Command overrides the image's entrypoint.
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`
	// Args are the arguments.
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`
	// Env is added to the step's environment, after STAGEHAND_POD_NAME,
	// STAGEHAND_POD_NAMESPACE, STAGEHAND_POD_LABELS and the others (docs/defer.md).
	// +listType=atomic
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// VolumeMounts mount volumes of the selected pod, by their names there:
	// persistentVolumeClaim, generic ephemeral (through its claim), configMap and
	// downwardAPI volumes. Any other kind (emptyDir, hostPath, secret, projected) fails
	// the step with a message naming it (docs/defer.md).
	// +listType=atomic
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// RestartPolicy overrides the policy's for this step.
	// +optional
	RestartPolicy *DeferRestartPolicy `json:"restartPolicy,omitempty"`
	// SecurityContext is the step container's; unset copies the selected pod's first
	// container's, so that the step may read its files and pass the namespace's Pod
	// Security level.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// Resources are the step container's requests and limits.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// DeferPolicyStatus counts the policy's pods and runs.
type DeferPolicyStatus struct {
	// ObservedGeneration is the generation these counts were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Steps is the number of steps, for the printer column.
	// +optional
	Steps int32 `json:"steps,omitempty"`
	// PodsMatched is the number of pods the selector selects now.
	// +optional
	PodsMatched int32 `json:"podsMatched"`
	// InProgress is the number of pods whose steps run now.
	// +optional
	InProgress int32 `json:"inProgress"`
	// Completed counts the runs whose steps all succeeded, since the policy's creation.
	// +optional
	Completed int64 `json:"completed"`
	// Failed counts the runs that ended with a failed step.
	// +optional
	Failed int64 `json:"failed"`
	// TimedOut counts the runs stopped at gracePeriodSeconds.
	// +optional
	TimedOut int64 `json:"timedOut"`
	// Skipped counts the pods whose steps did not run: a forced deletion, a lost node.
	// +optional
	Skipped int64 `json:"skipped"`
	// Conditions: Ready says whether every pod the policy selects is covered (for
	// AfterTermination, carries the finalizer).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeferPolicyConditionReady is true when the policy covers every pod it selects.
const DeferPolicyConditionReady = "Ready"

// DeferPolicyList is a list of DeferPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type DeferPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeferPolicy `json:"items"`
}

// DeferOutcome is how a pod's run ended.
type DeferOutcome string

const (
	// DeferCompleted: every step succeeded.
	DeferCompleted DeferOutcome = "Completed"
	// DeferFailed: some step failed for good.
	DeferFailed DeferOutcome = "Failed"
	// DeferTimedOut: gracePeriodSeconds ended the run.
	DeferTimedOut DeferOutcome = "TimedOut"
	// DeferSkipped: the steps did not run or did not finish, for a reason that is not
	// theirs: a forced deletion, a lost node, a deleted policy, a released pod, a
	// withdrawn EvictionRequest.
	DeferSkipped DeferOutcome = "Skipped"
)

// DeferRun is a pod's run, recorded in its DeferRunAnnotation. The controller writes it
// before it creates a step's pod and after each step ends, so that a restarted
// controller resumes where it was and never runs a finished step again.
type DeferRun struct {
	// Policy and PolicyUID name the policy, fixed at the run's start.
	Policy    string `json:"policy"`
	PolicyUID string `json:"policyUID"`
	// When is the policy's when.
	When DeferWhen `json:"when"`
	// Steps is the number of steps.
	Steps int `json:"steps"`
	// Started is when the first step was created; zero while the run waits for the
	// pod's containers to stop.
	Started *metav1.Time `json:"started,omitempty"`
	// Deadline is Started plus the grace period.
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// Current is the index of the step that runs or runs next (0-based); Steps when done.
	Current int `json:"current"`
	// Attempt is the current step's attempt, from 1.
	Attempt int `json:"attempt,omitempty"`
	// NotBefore delays the current step's next attempt (back-off).
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// QuotaWaits counts the current step's pod creations that an exceeded ResourceQuota
	// refused; they set NotBefore with a capped back-off.
	QuotaWaits int `json:"quotaWaits,omitempty"`
	// Failed lists the steps that failed for good, by name.
	Failed []string `json:"failed,omitempty"`
	// Outcome is set when the run has ended.
	Outcome DeferOutcome `json:"outcome,omitempty"`
	// Message says why, for an outcome other than Completed.
	Message string `json:"message,omitempty"`
}
