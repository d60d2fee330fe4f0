package deploymentconfig

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// syncDeploymentConfig is the DeploymentConfig controller's one decision loop. The order
// of its steps is what keeps DESIGN.md §4's invariants through crashes and restarts:
//
//  1. A latestVersion without its ReplicaSet (a crash between the two writes of step 3)
//     gets its ReplicaSet now, before anything else. A ReplicaSet that the apiserver
//     refuses for good (Invalid, Forbidden) fails the revision at once (invariant 7): the
//     status says Failed with the apiserver's message, and the create is not tried again
//     until the spec changes.
//  2. A non-terminal revision that is not the latest, or that is marked cancelled, is
//     stopped: cancelled and Failed in one Update, then its pods are deleted.
//  3. A config change while revision N is not terminal supersedes N (step 2's write);
//     revision N+1 starts only once N is terminal and its deployer pod is gone, checked
//     against the apiserver, not the cache. Then latestVersion is bumped first (an
//     UpdateStatus with the DC's resourceVersion, so a stale cache conflicts instead of
//     bumping twice) and the ReplicaSet is created second. A crash in between leaves a
//     latestVersion without a ReplicaSet, which step 1 repairs: latestVersion never
//     decreases and no revision N+2 is created while N+1 is not terminal.
//  4. Once the latest revision is terminal and its deployer pod has finished, replicas are
//     reconciled (the newest Complete revision runs spec.replicas, the others 0) and old
//     revisions are pruned. With spec.strategy.onFailure Freeze and the latest revision
//     Failed, nothing is scaled: every revision keeps its replicas (frozen) until a new
//     revision or a retry, and BeforeScaleDown requests not yet served are withdrawn; old
//     revisions are still pruned.
//  5. The status is written when it changed.
//
// A rollout request (the rollout-request annotation, see v1alpha1.RolloutRequest) joins
// in at steps 3 and 2b: a pending Latest or Rollback request asks for a new revision like
// a config change does, whatever the triggers; a pending Retry resets the Failed latest
// revision to New once its old deployer and hook pods and ExecutionHooks are gone, and
// not before its failure hook has finished (invariant 11: the retry waits for the hook,
// and the other steps go on meanwhile).
func (c *Controller) syncDeploymentConfig(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return plumbing.Fatal(err)
	}
	cached, err := c.dcLister.DeploymentConfigs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.dcWrites.Forget(key)
		c.pace.forget(key)
		return nil // deleted: the garbage collector removes its revisions and pods
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil {
		return nil
	}
	if c.dcWrites.Stale(key, cached.ResourceVersion) {
		return nil // the cache is behind our own status write; its event brings the DC back
	}
	c.dcWrites.Forget(key)
	dc := cached.DeepCopy()
	v1alpha1.SetDefaults(dc)
	log := plumbing.SyncLog(c.log, ns, name, v1alpha1.RevisionName(name, dc.Status.LatestVersion))
	began := time.Now()
	defer func() { log.WithField("duration", time.Since(began)).Debug("Synced the DeploymentConfig") }()

	if err := c.ensureDeployerAccess(ctx, dc); err != nil {
		return err
	}

	revs, current, err := c.cachedRevisions(dc)
	if err != nil || !current {
		return err
	}

	req := c.rolloutRequest(dc)

	// Step 1.
	latest := revision.Find(revs, dc.Status.LatestVersion)
	if createRefusal(dc) != nil {
		c.refusals.Delete(key) // the status says it now
	}
	if dc.Status.LatestVersion > 0 && latest == nil && createRefusal(dc) == nil {
		if r := c.rememberedRefusal(key, dc); r != nil {
			return c.writeRefusal(ctx, cached, dc, revs, r) // the cache had not seen it yet
		}
		latest, err = c.createRevision(ctx, dc, dc.Status.LatestVersion, causeOf(dc, req))
		if plumbing.Refused(err) {
			return c.refuseRevision(ctx, key, cached, dc, revs, dc.Status.LatestVersion, err)
		}
		if err != nil {
			return err
		}
		revs = append(revs, latest)
	}

	// Step 2.
	if stopped, err := c.stopUnwantedRevisions(ctx, dc, revs, latest); err != nil || stopped {
		return err // once stopped, the ReplicaSet updates bring the DC back with a fresh view
	}

	// Step 2b.
	if !dc.Spec.Paused && pendingRetry(dc, latest, req) && !c.retryWaits(dc, latest) {
		return c.retryRevision(ctx, dc, latest, req)
	}

	// Step 2c: the StatefulSet of a DC with spec.statefulSet holds the latest revision's
	// template, no pod moving until its deployer walks it (statefulset.go).
	if dc.Spec.StatefulSet != nil && c.stsLister != nil {
		if latest != nil && !revision.Phase(latest).IsTerminal() {
			if err := c.holdTemplateOf(ctx, dc, latest); err != nil {
				return err
			}
		}
		if err := c.recordHeldHash(ctx, dc, revs); err != nil {
			return err
		}
	}

	// Step 3.
	if needsNewRevision(dc, latest, req) {
		return c.newRevisionDue(ctx, cached, dc, revs, latest, req)
	}

	// Step 4.
	if err := c.afterRollout(ctx, dc, revs, latest); err != nil {
		return err
	}

	// Step 5.
	return c.updateStatus(ctx, cached, dc, revs, latest)
}

// cachedRevisions lists the DC's revisions from the cache, oldest first. current is false
// when the cache is behind: behind a write of this controller to one of the revisions
// (its event brings the DC back), or behind the DC's own latestVersion bump, which is
// written before a ReplicaSet is created (then err asks for a requeue).
func (c *Controller) cachedRevisions(dc *v1alpha1.DeploymentConfig) (revs []*appsv1.ReplicaSet, current bool, err error) {
	all, err := c.rsLister.ReplicaSets(dc.Namespace).List(labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: dc.Name}))
	if err != nil {
		return nil, false, err
	}
	revs = revision.Owned(dc.UID, all)
	for _, rs := range revs {
		rsKey := rs.Namespace + "/" + rs.Name
		if c.rsWrites.Stale(rsKey, rs.ResourceVersion) {
			return nil, false, nil
		}
		c.rsWrites.Forget(rsKey)
	}
	if n := len(revs); n > 0 {
		if last, _ := revision.Number(revs[n-1]); last > dc.Status.LatestVersion {
			return nil, false, plumbing.RequeueAfter(500*time.Millisecond, "the DeploymentConfig cache is behind its revisions")
		}
	}
	return revs, true, nil
}

// newRevisionDue is step 3 of syncDeploymentConfig, once a new revision is due: a latest
// revision that still runs is superseded first; one that ended must have its deployer
// pod gone, checked against the apiserver; then the new revision starts.
func (c *Controller) newRevisionDue(ctx context.Context, cached, dc *v1alpha1.DeploymentConfig,
	revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet, req *v1alpha1.RolloutRequest) error {
	if latest != nil && !revision.Phase(latest).IsTerminal() {
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, latest.Name).Info("Config changed while a rollout runs: superseding it")
		return c.stopRevision(ctx, dc, latest, v1alpha1.ReasonSuperseded)
	}
	if latest != nil {
		settled, err := c.deployerSettled(ctx, latest)
		if err != nil {
			return err
		}
		if !settled {
			return plumbing.RequeueAfter(time.Second, "waiting for the previous deployer pod to go away")
		}
	}
	return c.startRevision(ctx, cached, dc, revs, latest, pendingCreate(dc, req))
}

// needsNewRevision reports whether a new revision is due: a pending Latest or Rollback
// request asks for one whatever the triggers. The first revision starts once every
// ImageChange trigger has resolved. After that, a template that differs from the latest
// revision's snapshot starts one when there is a ConfigChange trigger, or when an image
// trigger pinned a new digest. Nothing starts while the DC is paused.
func needsNewRevision(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet, req *v1alpha1.RolloutRequest) bool {
	if dc.Spec.Paused {
		return false
	}
	if latest == nil && dc.Annotations[v1alpha1.AdoptAnnotation] == v1alpha1.AdoptPending {
		return false // kubectl stagehand adopt has not handed the pods over yet
	}
	if pendingCreate(dc, req) != nil {
		return true
	}
	if latest == nil {
		if dc.Status.LatestVersion != 0 || (!hasConfigChangeTrigger(dc) && len(dc.ImageTriggers()) == 0) {
			return false
		}
		return len(imagesWaiting(dc)) == 0
	}
	if !templateChanged(dc, latest) {
		return false
	}
	return hasConfigChangeTrigger(dc) || firedImageTrigger(dc, latest) != nil
}

// stopUnwantedRevisions is step 2: every non-terminal revision that is not the latest, or
// that is marked cancelled, is cancelled (Superseded or Cancelled) and its pods deleted.
// stopped says whether any was.
func (c *Controller) stopUnwantedRevisions(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) (stopped bool, err error) {
	for _, rs := range revs {
		if revision.Phase(rs).IsTerminal() || (rs == latest && !revision.Cancelled(rs)) {
			continue
		}
		reason := v1alpha1.ReasonCancelled
		if rs != latest || revision.Superseded(rs) {
			reason = v1alpha1.ReasonSuperseded
		}
		if err := c.stopRevision(ctx, dc, rs, reason); err != nil {
			return stopped, err
		}
		stopped = true
	}
	return stopped, nil
}

// afterRollout is step 4: once the latest revision is terminal and its deployer pod has
// finished, the replicas are reconciled (or held, when frozen) and old revisions pruned.
func (c *Controller) afterRollout(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) error {
	if latest == nil || !revision.Phase(latest).IsTerminal() || !c.deployerFinishedInCache(latest) {
		return nil
	}
	scale := c.scaleRevisions
	if dc.Spec.StatefulSet != nil {
		// Its revisions run no pod of their own: the StatefulSet does (statefulset.go).
		scale = func(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) error {
			if c.stsLister == nil {
				return nil
			}
			if frozenAt(dc, latest) != "" || revision.FailureHookPending(latest) {
				return c.holdFrozenSet(ctx, dc)
			}
			return c.settleStatefulSet(ctx, dc, revs, latest)
		}
	} else if frozenAt(dc, latest) != "" || revision.FailureHookPending(latest) {
		// Frozen, or the failed hook runs first: its end (an annotation) brings the DC back.
		scale = c.holdFrozen
	}
	if err := scale(ctx, dc, revs); err != nil {
		return err
	}
	return c.pruneRevisions(ctx, dc, revs)
}
