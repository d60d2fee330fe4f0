package v1alpha1

// Event reasons and their messages, in pairs, of the events that the controllers record.
// Every event is recorded on the DeploymentConfig, so `kubectl describe dc/<name>` tells
// the story of its rollouts. They live in the API so that readers of the events (the
// kubectl plugin, tests, users' tooling) need not link the controllers.
const (
	// EventRevisionCreated: a new revision (ReplicaSet) was created.
	EventRevisionCreated = "RevisionCreated"
	// MsgRevisionCreated takes the revision name and its cause.
	MsgRevisionCreated = "Created revision %s (cause: %s)"
	// EventStuckPodReplaced: after a failed revision of a StatefulSet, a pod of the failed
	// template that was not Ready was deleted, so that it comes back on the restored one.
	EventStuckPodReplaced = "StuckPodReplaced"
	// MsgStuckPodReplaced takes the pod name and the failed template's hash.
	MsgStuckPodReplaced = "Deleted pod %s, not Ready on the failed template %s, so that the StatefulSet creates it again on the restored template (its claims are kept)"

	// EventRolloutRetried: a retry request reset the Failed latest revision to New.
	EventRolloutRetried = "RolloutRetried"
	// MsgRolloutRetried takes the revision name.
	MsgRolloutRetried = "Revision %s is retried: its failed deployer and hook pods were deleted and it starts again"

	// EventImageTriggered: an ImageChange trigger pinned a new digest into the template.
	EventImageTriggered = "ImageTriggered"
	// MsgImageTriggered takes the list of "<tag> is now <repo@sha256:...>".
	MsgImageTriggered = "New image digest pinned: %s"

	// EventImageResolveFailed: a watched tag could not be resolved (Warning).
	EventImageResolveFailed = "ImageResolveFailed"
	// MsgImageResolveFailed takes the tag and the registry's error.
	MsgImageResolveFailed = "Cannot resolve %s: %s. Check the image name, the registry, and the pull secrets of the pods (imagePullSecrets)"

	// EventInvalidRolloutRequest: the rollout-request annotation could not be read.
	EventInvalidRolloutRequest = "InvalidRolloutRequest"
	// MsgInvalidRolloutRequest takes the error.
	MsgInvalidRolloutRequest = "Ignoring the rollout request: %v. Remove the annotation, or make it again with kubectl stagehand rollout"

	// EventRevisionSuperseded: a newer revision cancelled a running one.
	EventRevisionSuperseded = "RolloutSuperseded"
	// MsgRevisionSuperseded takes the revision name.
	MsgRevisionSuperseded = "Revision %s was superseded by a newer revision; its deployer and hook pods are deleted"

	// EventRevisionCancelled: a revision marked cancelled was stopped.
	EventRevisionCancelled = "RolloutCancelled"
	// MsgRevisionCancelled takes the revision name.
	MsgRevisionCancelled = "Revision %s was cancelled; its deployer and hook pods are deleted"

	// EventDeployerPodCreateFailed: the apiserver refused the deployer pod.
	EventDeployerPodCreateFailed = "DeployerPodCreateFailed"
	// MsgDeployerPodCreateFailed takes the pod name, the error and the deadline.
	MsgDeployerPodCreateFailed = "Cannot create deployer pod %s: %v. Check the namespace's quota, admission policies and the stagehand-deployer service account; the revision fails at %s if this persists"

	// EventRolloutPending, EventRolloutRunning, EventRolloutComplete and EventRolloutFailed
	// follow the revision's phase. RolloutPending is also the event of the deployer pod's
	// creation: a revision is Pending from the moment its deployer pod exists.
	EventRolloutPending = "RolloutPending"
	// MsgRolloutPending takes the revision name and the deployer pod's name.
	MsgRolloutPending = "Revision %s: created deployer pod %s, pending"
	// EventRolloutRunning is recorded when the deployer pod runs.
	EventRolloutRunning = "RolloutRunning"
	// MsgRolloutRunning takes the revision name.
	MsgRolloutRunning = "Revision %s: the deployer pod is running"
	// EventRolloutComplete is recorded when the deployer exited 0.
	EventRolloutComplete = "RolloutComplete"
	// MsgRolloutComplete takes the revision name.
	MsgRolloutComplete = "Revision %s is complete"
	// EventRolloutFailed is a Warning with the outcome's reason and message.
	EventRolloutFailed = "RolloutFailed"
	// MsgRolloutFailed takes the revision name, the reason and the message.
	MsgRolloutFailed = "Revision %s failed: %s: %s"

	// EventRolloutFrozen is a Warning, recorded once when a Failed latest revision freezes
	// the replicas (spec.strategy.onFailure: Freeze).
	EventRolloutFrozen = "RolloutFrozen"
	// MsgRolloutFrozen takes the revision name (through FrozenMessage).
	MsgRolloutFrozen = "Revision %s failed and spec.strategy.onFailure is Freeze: no revision is scaled, every one keeps its replicas (spec.replicas changes too wait). Next: kubectl stagehand rollout retry to run it again, kubectl stagehand rollout undo to roll back, or kubectl stagehand set ... for a new revision"

	// EventRevisionScaled: the controller scaled a revision after the rollout ended.
	EventRevisionScaled = "RevisionScaled"
	// MsgRevisionScaled takes the revision name, the old and the new replica count.
	MsgRevisionScaled = "Scaled revision %s from %d to %d"

	// EventRevisionPruned: an old revision beyond revisionHistoryLimit was deleted.
	EventRevisionPruned = "RevisionPruned"
	// MsgRevisionPruned takes the revision name and the limit.
	MsgRevisionPruned = "Deleted old revision %s (revisionHistoryLimit %d)"

	// EventDeployerAccessCreated: the deployer's ServiceAccount or RoleBinding was created.
	EventDeployerAccessCreated = "DeployerAccessCreated"
	// MsgDeployerAccessCreated takes the kind and the name.
	MsgDeployerAccessCreated = "Created %s %s for the deployer pods of this namespace"

	// EventRevisionCreateFailed: the apiserver refused a revision's ReplicaSet (Warning).
	EventRevisionCreateFailed = "RevisionCreateFailed"
	// MsgRevisionCreateFailed takes the revision name and the apiserver's message.
	MsgRevisionCreateFailed = "Revision %s failed: the apiserver refused its ReplicaSet: %s. Fix the DeploymentConfig's spec; the previous revision keeps serving"

	// EventSyncFailed: a sync kept failing for plumbing.MaxRetries tries; it is still
	// retried, every few minutes.
	EventSyncFailed = "SyncFailed"
	// MsgSyncFailed takes the error.
	MsgSyncFailed = "Syncing keeps failing; still retrying every few minutes: %v"

	// EventNotificationFailed (Warning): a RolloutNotifier's delivery got no 2xx answer
	// within its deadline, or cannot be sent at all (docs/notifications.md).
	EventNotificationFailed = "NotificationFailed"
	// EventNotifierNotReady (Warning): a RolloutNotifier's receiver cannot be sent to: a
	// Secret that cannot be read, or a template that does not parse. The message says which.
	EventNotifierNotReady = "NotifierNotReady"
)

// Reasons of the Available condition (the Progressing reasons are in revision.go).
const (
	// ReasonMinimumReplicasAvailable: at least replicas − maxUnavailable pods are available.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonMinimumReplicasUnavailable: fewer pods are available than that.
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)
