// Package controller wires Stagehand's watch controllers into one process: the Manager
// builds the shared informers, filtered to what the controllers read, and runs every
// controller over them.
//
// Each controller lives in its own package, with controller.go (wiring) and sync.go (the
// handler), and follows the client-go shape (listers, a rate-limited workqueue, an event
// recorder, syncHandler as a field):
//
//   - deploymentconfig: DeploymentConfigs into revisions; triggers, supersede, scale,
//     prune, status.
//   - deployerpod: one deployer pod per revision, and the revision's phase from it.
//   - imagetrigger: ImageChange triggers; pins new digests into the template.
//   - executionhook: ExecutionHooks; HookActions run in running containers through
//     pods/exec, in files by phase (sync, verify, select, attempt).
//   - deferpolicy: DeferPolicies; the defer finalizer, clean-up steps as pods after a pod
//     terminates and before Stagehand's scale-downs (docs/defer.md).
//
// Their shared machinery (queue, retries, give-up events, recorder, informers, metrics)
// is written once in plumbing, and the revision phase transitions that two of them write
// are in phase. The controllers never run strategy code: the deployer pod does.
package controller
