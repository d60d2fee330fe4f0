// Package rolling is the Rolling strategy: a surge/unavailable loop that never lets the
// available pods fall below desired − maxUnavailable, with a progress deadline, and pre and
// post hooks. It is filled in by the rollout-loop issue.
package rolling
