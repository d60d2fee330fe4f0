// Package rolling is the Rolling strategy: a surge/unavailable loop that never lets the
// available pods fall below desired − maxUnavailable, with a progress deadline, and pre and
// post hooks. The first rollout, which has no old revision, is handed to an injected
// FirstRollout (Recreate without the mid hook).
package rolling
