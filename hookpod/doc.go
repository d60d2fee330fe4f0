// Package hookpod builds, runs and watches hook pods (and later defer step pods) for the
// deployer: deterministic names, an owner, AlreadyExists means "watch the existing pod",
// streamed logs, and the Abort, Retry and Ignore failure policies. It is filled in by the
// hooks issue.
package hookpod
