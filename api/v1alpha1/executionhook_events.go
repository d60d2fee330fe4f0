package v1alpha1

// Event reasons and their messages, in pairs, of the events that the ExecutionHook
// controller records on an ExecutionHook.
const (
	// EventExecutionHookStarted (Normal): the hook resolved its action and its containers.
	EventExecutionHookStarted = "Started"
	// MsgExecutionHookStarted takes the action name and the number of containers.
	MsgExecutionHookStarted = "Running action %s in %d containers"

	// EventExecutionHookContainerFailed (Warning): the action failed for good in one
	// container.
	EventExecutionHookContainerFailed = "ContainerFailed"
	// MsgExecutionHookContainerFailed takes the pod, the container, the error type, the
	// message and the output's last line.
	MsgExecutionHookContainerFailed = "%s/%s: %s: %s%s"

	// EventExecutionHookCompleted (Normal): the action succeeded in every container.
	EventExecutionHookCompleted = "Completed"
	// EventExecutionHookFailed (Warning): the hook failed; the message says why.
	EventExecutionHookFailed = "Failed"
)
