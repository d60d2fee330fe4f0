// Package deferstep is what Stagehand knows about the pods of DeferPolicy steps
// (docs/defer.md), in one place for the DeferPolicy controller, which runs them, and the
// kubectl plugin, which shows and stops them:
//
//   - build.go: Build, the pure builder of a step's pod: on the selected pod's node, with
//     the volumes the step may share, the pod's identity in its environment, and no API
//     credentials;
//   - name.go: Name, the deterministic name of a step's attempt, and Selector, the label
//     selector of a pod's step pods;
//   - outcome.go: ExitNote, how a step pod's container ended, on api/podstatus;
//   - retry.go: RetryDelay, the wait between a step's attempts, on cenkalti/backoff;
//   - stop.go: Stop, which deletes the step pods that still run, for the controller when a
//     run ends early and for kubectl stagehand defer release.
//
// DESIGN.md §2 gives hookpod the step pods, so this lives under it. It imports only api/,
// client-go, apimachinery and cenkalti/backoff, never hookpod itself: the controller and
// the plugin, which may not import hookpod (docs/architecture.md), import this package
// alone.
package deferstep
