// Package strategies holds what the built-in strategies (recreate, rolling) and custom
// strategies share: the one-method Strategy interface, the narrow client interfaces it is
// built over, the typed errors that stop a rollout early, the hook call sites, pod
// availability, and watch-based scale-and-wait.
//
// It never imports the controller or the deployer driver; the driver maps its errors to
// the deployer-pod contract's exit codes (deployer.Outcome).
package strategies
