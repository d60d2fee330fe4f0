// Package deployer is the deployer driver and the SDK for custom strategy images: it
// reads the deployer-pod contract's inputs (one envconfig struct), finds the from and to
// revisions, runs a strategy, and writes the termination message before it exits with a
// contract exit code.
//
//   - main.go: Main and Execute, the process around a Flow (flags, logger, clients);
//   - config.go, inputs.go: the contract's inputs and the from/to revisions;
//   - deployer.go: the Deployer a Flow gets, with the built-in strategies and
//     scale-and-wait as steps of a custom flow;
//   - hooks.go: lifecycle hooks, through hookpod;
//   - exit.go: errors to the contract's exit codes and the termination message.
//
// It never imports the controller.
package deployer
