// Package podstatus reads what a pod's status says, for every part of Stagehand that runs or
// watches pods: the deployer and its strategies, hookpod (hook and defer step pods), the
// controllers and the plugin.
//
//   - outcome.go: whether a pod has finished, a container's terminated state and exit
//     code, and when it finished;
//   - stuck.go: a container that waits in a state it will not leave by itself;
//   - available.go: a pod that counts as available after minReadySeconds;
//   - text.go: the last line of a container's output, and truncation that keeps UTF-8
//     characters whole.
//
// It sits at the bottom of the import graph beside api/revision and imports only
// k8s.io/api and the standard library.
package podstatus
