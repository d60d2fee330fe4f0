// Package strategies defines the one-method Strategy interface that the built-in
// strategies (recreate, rolling) implement. It is filled in by the rollout-loop issue.
package strategies
