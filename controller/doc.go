// Package controller wires Stagehand's watch controllers into one process: the Manager
// builds the shared informers, filtered to what the controllers read, and runs every
// controller over them.
//
// Each controller lives in its own package and follows the client-go shape (listers, a
// rate-limited workqueue, an event recorder, syncHandler as a field):
//
//   - deploymentconfig: DeploymentConfigs into revisions; triggers, supersede, scale,
//     prune, status.
//   - deployerpod: one deployer pod per revision, and the revision's phase from it.
//   - imagetrigger: ImageChange triggers; pins new digests into the template.
//
// Their shared machinery (queue, retries, give-up events, recorder, informers, metrics)
// is written once in plumbing, and the revision phase transitions that two of them write
// are in phase. The controllers never run strategy code: the deployer pod does.
package controller
