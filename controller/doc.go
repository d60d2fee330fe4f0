// Package controller holds Stagehand's watch controllers: DeploymentConfig, deployer pod,
// triggers, and later ExecutionHook and defer. Each controller follows the client-go shape
// (listers, a rate-limited workqueue, an event recorder, syncHandler as a field). The
// controller never runs strategy code: it creates one deployer pod per revision and maps
// the pod's outcome to the revision's phase. It is filled in by the rollout-loop issue.
package controller
