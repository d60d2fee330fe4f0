// Package deployer is the deployer driver and the SDK for custom strategy images: it
// reads the deployer-pod contract's inputs (one envconfig struct), finds the from and to
// revisions, runs a strategy, and writes the termination message before it exits with a
// contract exit code. It never imports the controller. It is filled in by the rollout-loop
// issue.
package deployer
