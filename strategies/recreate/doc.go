// Package recreate is the Recreate strategy: pre hook, scale the old revisions to 0 and
// wait until their pods have stopped (each finished or gone, as the Deployment controller's
// Recreate waits; a pod that waits for its DeferPolicy steps counts as running), mid hook, scale the new revision up and wait until every
// pod is available, post hook.
package recreate
