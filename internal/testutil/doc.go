// Package testutil holds the object builders that Stagehand's tests share, unit tests and
// the integration tests in e2e/integration alike: DeploymentConfigs and hand-made revisions
// (ReplicaSets with the labels, annotations and ownerReference of DESIGN.md §4). It needs no
// cluster; the cluster helpers live in e2e/framework.
package testutil
