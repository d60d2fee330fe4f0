package v1alpha1

// RevisionPhase is the phase of one revision (one ReplicaSet). It only moves forward,
// New → Pending → Running → Complete | Failed; a retry is the one explicit reset to New.
type RevisionPhase string

const (
	// RevisionPhaseNew: the ReplicaSet exists; its deployer pod does not yet.
	RevisionPhaseNew RevisionPhase = "New"
	// RevisionPhasePending: the deployer pod exists but does not run yet.
	RevisionPhasePending RevisionPhase = "Pending"
	// RevisionPhaseRunning: the deployer pod runs.
	RevisionPhaseRunning RevisionPhase = "Running"
	// RevisionPhaseComplete: the deployer exited 0.
	RevisionPhaseComplete RevisionPhase = "Complete"
	// RevisionPhaseFailed: the deployer failed, was cancelled or was superseded.
	RevisionPhaseFailed RevisionPhase = "Failed"
)

// IsTerminal reports whether a revision in this phase is finished.
func (p RevisionPhase) IsTerminal() bool {
	return p == RevisionPhaseComplete || p == RevisionPhaseFailed
}

// Labels that every revision (ReplicaSet), its pods, its deployer pod and its hook pods carry.
const (
	// ConfigLabel holds the name of the DeploymentConfig.
	ConfigLabel = GroupName + "/config"
	// RevisionLabel holds the revision number N.
	RevisionLabel = GroupName + "/revision"
	// DeployerPodForLabel marks a deployer pod; it holds the revision's ReplicaSet name.
	DeployerPodForLabel = GroupName + "/deployer-pod-for"
	// HookStageLabel marks a hook pod; it holds pre, mid or post.
	HookStageLabel = GroupName + "/hook"
	// ExecHookOfLabel marks the ExecutionHook and HookAction of an exec lifecycle hook;
	// it holds the revision's name. The ExecutionHook controller runs such a hook only
	// when it matches the exec hook in that revision's config snapshot.
	ExecHookOfLabel = GroupName + "/exec-hook-of"
)

// Annotations on a revision's ReplicaSet (DESIGN.md §4).
const (
	// PhaseAnnotation holds the RevisionPhase.
	PhaseAnnotation = GroupName + "/phase"
	// ConfigSnapshotAnnotation holds the DeploymentConfig spec as JSON at this revision:
	// the deployer's input and the source of rollback.
	ConfigSnapshotAnnotation = GroupName + "/config-snapshot"
	// DesiredReplicasAnnotation holds the replicas the revision should run once complete.
	DesiredReplicasAnnotation = GroupName + "/desired-replicas"
	// CauseAnnotation holds why the revision was created.
	CauseAnnotation = GroupName + "/cause"
	// CancelledAnnotation is "true" once the revision was cancelled.
	CancelledAnnotation = GroupName + "/cancelled"
	// StatusReasonAnnotation holds the reason and message of the revision's outcome.
	StatusReasonAnnotation = GroupName + "/status-reason"
	// WaitingAnnotation holds what a New revision waits for before its deployer pod can be
	// created, "<Reason>: <message>" (an exceeded quota, a ServiceAccount not yet seen). The
	// controller retries with back-off meanwhile and removes it when the phase moves on.
	WaitingAnnotation = GroupName + "/waiting"
	// DeployerPodAnnotation holds the name of the revision's deployer pod.
	DeployerPodAnnotation = GroupName + "/deployer-pod"
	// ImageTriggerAnnotation on a revision caused by an image change holds the watched tag
	// and the digest reference it moved to: "<tag> -> <repo@sha256:...>".
	ImageTriggerAnnotation = GroupName + "/image-trigger"
	// WorkloadLabel marks the revisions of a DeploymentConfig that runs on a StatefulSet
	// (value WorkloadStatefulSet): ControllerRevisions <dc>-<N>, which the revision model
	// reads as ReplicaSets that run no pod (docs/statefulsets.md).
	WorkloadLabel = GroupName + "/workload"
	// TemplateHashAnnotation on a StatefulSet revision holds the StatefulSet's
	// controller-revision-hash of its template, once the StatefulSet's status names it:
	// the pods of the revision are the StatefulSet's pods with that hash.
	TemplateHashAnnotation = GroupName + "/template-hash"
	// StatefulSetRevisionAnnotation on the StatefulSet of a DeploymentConfig is the number
	// of the revision whose template the controller wrote into it last: once its status
	// has observed that write, its updateRevision is that revision's template hash.
	StatefulSetRevisionAnnotation = GroupName + "/revision"
)

// WorkloadStatefulSet is the WorkloadLabel of a StatefulSet revision.
const WorkloadStatefulSet = "StatefulSet"

// Condition types of a DeploymentConfig.
const (
	// ConditionAvailable is True when at least spec.replicas − maxUnavailable pods are available.
	ConditionAvailable = "Available"
	// ConditionProgressing tells how the latest rollout goes.
	ConditionProgressing = "Progressing"
	// ConditionImagesResolved is True when every ImageChange trigger's tag resolved at its
	// last check; it only exists on a DC with ImageChange triggers.
	ConditionImagesResolved = "ImagesResolved"
)

// Reasons of the ImagesResolved condition.
const (
	ReasonImagesResolved = "Resolved"
	ReasonImagesPending  = "WaitingForFirstCheck"
	ReasonRegistryError  = "RegistryError"
)

// Reasons of the Progressing condition.
const (
	ReasonNewReplicaSetCreated = "NewReplicaSetCreated"
	ReasonRolloutComplete      = "RolloutComplete"
	ReasonRolloutFailed        = "RolloutFailed"
	ReasonRolloutCancelled     = "RolloutCancelled"
	ReasonPaused               = "Paused"
	// ReasonRolloutFrozen: the latest revision Failed with onFailure: Freeze; no revision
	// is scaled until a new revision or a retry.
	ReasonRolloutFrozen = "RolloutFrozen"
	// ReasonWaitingForImages: the first rollout waits until every ImageChange trigger resolved.
	ReasonWaitingForImages = "WaitingForImages"
)
