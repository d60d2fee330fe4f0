package v1alpha1

// Event reasons of the DeferPolicy controller, recorded on the pod a run is for.
const (
	// EventDeferStarted (Normal): the run began; the message names the policy.
	EventDeferStarted = "DeferStarted"
	// EventDeferStepStarted (Normal): a step's pod was created.
	EventDeferStepStarted = "DeferStepStarted"
	// EventDeferStepSucceeded (Normal): a step's pod succeeded.
	EventDeferStepSucceeded = "DeferStepSucceeded"
	// EventDeferStepFailed (Warning): a step failed; the message says whether it runs
	// again.
	EventDeferStepFailed = "DeferStepFailed"
	// EventDeferCompleted (Normal): every step succeeded.
	EventDeferCompleted = "DeferCompleted"
	// EventDeferFailed (Warning): the run ended with failed steps.
	EventDeferFailed = "DeferFailed"
	// EventDeferTimedOut (Warning): gracePeriodSeconds ended the run.
	EventDeferTimedOut = "DeferTimedOut"
	// EventDeferSkipped (Warning): the steps did not run, or not all of them, for a
	// reason that is not theirs (forced deletion, lost node, deleted policy).
	EventDeferSkipped = "DeferSkipped"
	// EventDeferStepWaitsForQuota (Warning): a step's pod was refused because a
	// ResourceQuota is used up; the message names the quota, and the step is tried again
	// with a back-off within the grace period.
	EventDeferStepWaitsForQuota = "DeferStepWaitsForQuota"
	// EventDeferReleased (Warning): someone removed the finalizer on purpose
	// (kubectl stagehand defer release).
	EventDeferReleased = "DeferReleased"
	// EventDeferConflict (Warning): more than one policy of the same kind selects the
	// pod; the first by name is used.
	EventDeferConflict = "DeferPolicyConflict"
)

// EventDeferScaleDownRemoved (Normal), on a pod chosen for a scale-down that the
// ReplicaSet controller kept (another pod turned not ready and went first): the
// DeferPolicy controller deletes it, because its steps have run. The ReplicaSet controller
// replaces it.
const (
	EventDeferScaleDownRemoved = "DeferScaleDownRemoved"
	MsgDeferScaleDownRemoved   = "Deleted after its BeforeScaleDown steps for the scale-down of ReplicaSet %s: the ReplicaSet controller kept it, and a pod whose steps ran does not keep serving"
)

// Events of the BeforeEviction phase, on the pod.
const (
	// EventDeferEvictionBlocked (Warning): the run did not succeed and the policy's
	// evictionFailurePolicy is Block; the message names the failed steps.
	EventDeferEvictionBlocked = "DeferEvictionBlocked"
	// EventDeferEvicting (Normal): the steps ended and Stagehand evicts the pod through
	// pods/eviction, PodDisruptionBudgets included.
	EventDeferEvicting = "DeferEvicting"
)
