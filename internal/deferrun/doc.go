// Package deferrun is the kubectl plugin's logic for `kubectl stagehand defer`: it reads
// the defer runs of pods (status) and releases a pod from its run (release). The commands
// in cmd/kubectl-stagehand only parse flags and print what it returns. See docs/defer.md
// and docs/cli.md.
//
// It is named deferrun, not defer, because defer is a Go keyword; and not deferpolicy,
// which is the controller (controller/deferpolicy): what the plugin reads and releases is
// a pod's defer run, the record stagehand.dev/defer-run that the controller keeps on the
// pod, with the run's step pods.
//
//   - client.go: Client, and the policies it reads for the steps' names;
//   - status.go: Status, one pod's defer phase, read from its run and its step pods;
//   - report.go: Report, what defer status prints: one pod, or the pods in their defer
//     phase, as tables;
//   - release.go: Release, which removes the finalizer stagehand.dev/defer, stops the
//     running steps (hookpod/deferstep.Stop) and records the event DeferReleased.
//
// It imports api/ and hookpod/deferstep, never hookpod or controller/.
package deferrun
