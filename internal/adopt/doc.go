// Package adopt turns a running Deployment into a DeploymentConfig of the same name, and
// back (docs/adopt.md). It is the one home of what maps to what: the kubectl plugin's
// adopt and eject commands build on it.
package adopt
