// Package recreate is the Recreate strategy: pre hook, scale the old revisions to 0 and
// wait until their pods are gone, mid hook, scale the new revision up and wait until every
// pod is available, post hook.
package recreate
