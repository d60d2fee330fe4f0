package v1alpha1

// Event reasons and their messages, in pairs, of the events that the deployer records on
// the DeploymentConfig for each hook run (DESIGN.md §7). They live in the API because
// readers of those events (kubectl stagehand rollout status, tests, users' tooling) must
// not link the deployer's runtime to know them.
//
// A message takes the stage (pre, mid or post), the hook pod's name and the attempt note
// (" (attempt 2 of 3)", empty when the hook runs once). They are event reasons: the
// revision's outcome reason is ReasonHookFailed, whose value happens to be the same.
const (
	// EventHookStarted (Normal): a hook pod was started.
	EventHookStarted = "HookStarted"
	// MsgHookStarted takes the stage, the pod name and the attempt note.
	MsgHookStarted = "%s hook %s%s started"

	// EventHookSucceeded (Normal): a hook pod succeeded.
	EventHookSucceeded = "HookSucceeded"
	// MsgHookSucceeded takes the stage, the pod name and the attempt note.
	MsgHookSucceeded = "%s hook %s%s succeeded"

	// EventHookNotRun (Warning): an exec hook found no running pod to run in, so it did
	// not run; the rollout goes on (the failure hook records NotRun).
	EventHookNotRun = "HookNotRun"
	// MsgHookNotRun takes the stage, the ExecutionHook's name, the attempt note and the
	// reason.
	MsgHookNotRun = "%s hook %s%s did not run: %s"

	// EventHookFailed (Warning): a hook pod failed; the message says what happens next.
	EventHookFailed = "HookFailed"
	// MsgHookFailed takes the stage, the pod name, the attempt note, the exit ("exit 1")
	// and the decision of the failure policy.
	MsgHookFailed = "%s hook %s%s failed (%s): %s"
)
