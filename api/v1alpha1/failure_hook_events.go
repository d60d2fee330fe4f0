package v1alpha1

// The events of the failure hook, recorded on the DeploymentConfig by the controller.
const (
	// EventFailureHookStarted: the failure-hook runner pod was created.
	EventFailureHookStarted = "FailureHookStarted"
	// MsgFailureHookStarted takes the revision and the runner pod.
	MsgFailureHookStarted = "Revision %s failed: its failed hook runs in pod %s; the rollback waits for it"

	// EventFailureHookSucceeded: the failure hook succeeded.
	EventFailureHookSucceeded = "FailureHookSucceeded"
	// MsgFailureHookSucceeded takes the revision.
	MsgFailureHookSucceeded = "The failed hook of revision %s succeeded"

	// EventFailureHookFailed: the failure hook failed (Warning). The revision stays Failed.
	EventFailureHookFailed = "FailureHookFailed"
	// MsgFailureHookFailed takes the revision and the reason.
	MsgFailureHookFailed = "The failed hook of revision %s failed: %s; see kubectl stagehand rollout logs"

	// EventFailureHookTimedOut: the failure hook ran past its bound and was stopped (Warning).
	EventFailureHookTimedOut = "FailureHookTimedOut"
	// MsgFailureHookTimedOut takes the revision, the runner pod and the bound.
	MsgFailureHookTimedOut = "The failed hook of revision %s ran longer than %s: pod %s was deleted and the rollback goes on"

	// EventFailureHookNotRun: the failure hook could not run (Warning): its exec hook
	// found no running pod to run in. Nothing was undone; the rollback goes on.
	EventFailureHookNotRun = "FailureHookNotRun"
	// MsgFailureHookNotRun takes the revision and the reason.
	MsgFailureHookNotRun = "The failed hook of revision %s was not run (%s), and the rollback goes on"

	// EventRetryWaitsForFailureHook: a retry request waits for the failed hook of the
	// revision it retries (Normal); the retry starts once the hook has finished.
	EventRetryWaitsForFailureHook = "RetryWaitsForFailureHook"
	// MsgRetryWaitsForFailureHook takes the revision.
	MsgRetryWaitsForFailureHook = "The retry of revision %s waits for its failed hook, which has not finished: the retry starts once the hook has ended"

	// ReasonFailureHookRunning: the Progressing condition while the latest revision's
	// failure hook runs and the rollback waits.
	ReasonFailureHookRunning = "FailureHookRunning"
)
