// Package hookpod builds, runs and watches hook pods for the deployer: deterministic
// names, an owner, AlreadyExists means "watch the existing pod", streamed logs, and the
// Abort, Retry and Ignore failure policies.
//
//   - Build is the pure builder of a hook pod (DESIGN.md §7): name, labels, owner, and what
//     it inherits from the template container and the pod template.
//   - HookExecutor runs one pod to its end: create or adopt, watch, stream the log. A pod
//     whose container cannot start (podstatus.StuckContainer) fails after a short grace,
//     and is stopped and kept (stuck.go).
//   - Runner applies a hook's failure policy over attempts, records events on the
//     DeploymentConfig and prints the deployer's progress lines.
//
// It imports only api/ and client-go: the strategies adapt its errors to theirs. Defer
// step pods are built, named, read and stopped in the subpackage hookpod/deferstep, which
// the DeferPolicy controller and the plugin import without hookpod itself.
package hookpod
