// Package testutil holds the object builders and cluster helpers that Stagehand's
// integration tests share: DeploymentConfigs and hand-made revisions (ReplicaSets with the
// labels, annotations and ownerReference of DESIGN.md §4), CRD installation, and a pod
// watcher that records what a rollout did.
package testutil
