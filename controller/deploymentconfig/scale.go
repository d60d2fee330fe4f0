package deploymentconfig

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// replicaTargets says how many replicas each revision runs once the latest rollout
// ended (DESIGN.md §4 invariant 4): the newest Complete revision runs spec.replicas, every
// other revision 0. With spec.test every revision runs 0.
func replicaTargets(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) map[string]int32 {
	targets := make(map[string]int32, len(revs))
	for _, rs := range revs {
		targets[rs.Name] = 0
	}
	if active := revision.NewestComplete(revs); active != nil && !dc.Spec.Test {
		targets[active.Name] = revision.ConfigReplicas(dc)
	}
	return targets
}

// frozenAt is the name of the latest revision when it froze the replicas: it Failed and
// spec.strategy.onFailure is Freeze. Then the controller scales no revision, whatever
// spec.replicas says, until a new revision or a retry makes another revision the latest
// or the latest one New again. Empty when nothing is frozen.
func frozenAt(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) string {
	if latest == nil || dc.Spec.Strategy.OnFailure != v1alpha1.OnFailureFreeze || revision.Phase(latest) != v1alpha1.RevisionPhaseFailed {
		return ""
	}
	return latest.Name
}

// holdFrozen keeps a frozen DC's revisions where they are: it withdraws each BeforeScaleDown
// request that no DeferPolicy has served yet, which would otherwise lower the replicas once
// its steps had run. A request whose pods were already chosen is left to finish: their
// steps ran or run, and such pods must not keep serving (DESIGN.md §4 invariant 8). The
// write carries the cached resourceVersion, so a choice made meanwhile conflicts and is
// seen on the next sync.
func (c *Controller) holdFrozen(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) error {
	for _, rs := range revs {
		if _, _, chose := v1alpha1.DeferScaleDownChoiceOf(rs); chose || !v1alpha1.HasDeferScaleDownRequest(rs) {
			continue
		}
		held := rs.DeepCopy()
		v1alpha1.ClearDeferScaleDownRequest(held)
		written, err := revisions.Client{Kube: c.kube}.Update(ctx, held, plumbing.UpdateOptions())
		if err != nil {
			return fmt.Errorf("withdrawing the BeforeScaleDown request of frozen revision %s: %w", rs.Name, err)
		}
		c.rsWrites.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, written.ResourceVersion)
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).Info("Withdrew a BeforeScaleDown request: the rollout is frozen (onFailure: Freeze)")
	}
	return nil
}

// scaleRevisions applies replicaTargets. It also keeps the active revision's
// desired-replicas annotation equal to spec.replicas, so that a later rollout or rollback
// starts from the current size.
func (c *Controller) scaleRevisions(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) error {
	active := revision.NewestComplete(revs)
	for _, rs := range revs {
		want := replicaTargets(dc, revs)[rs.Name]
		// The active revision's desired-replicas annotation follows spec.replicas; the
		// others keep theirs.
		desiredStale := false
		if rs == active && !dc.Spec.Test {
			desired, err := revision.DesiredReplicas(rs)
			desiredStale = err != nil || desired != want
		}
		deferred := want < rsReplicas(rs) && c.deferScaleDown(rs.Namespace, rs.Spec.Template.Labels)
		asked := v1alpha1.HasDeferScaleDownRequest(rs)
		if deferred && v1alpha1.DeferScaleDownRequestIs(rs, want) && !desiredStale {
			continue // the DeferPolicy controller lowers the replicas once the steps have run
		}
		if !deferred && !asked && rsReplicas(rs) == want && !desiredStale {
			continue
		}
		scaled := rs.DeepCopy()
		if scaled.Annotations == nil {
			scaled.Annotations = map[string]string{}
		}
		if deferred {
			v1alpha1.SetDeferScaleDownRequest(scaled, want)
		} else {
			v1alpha1.ClearDeferScaleDownRequest(scaled)
			scaled.Spec.Replicas = &want
		}
		if desiredStale {
			scaled.Annotations[v1alpha1.DesiredReplicasAnnotation] = revision.FormatDesiredReplicas(want)
		}
		written, err := revisions.Client{Kube: c.kube}.Update(ctx, scaled, plumbing.UpdateOptions())
		if err != nil {
			return fmt.Errorf("scaling revision %s to %d: %w", rs.Name, want, err)
		}
		c.rsWrites.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, written.ResourceVersion)
		if deferred {
			plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).WithField("replicas", want).Info("Asked for a scale-down after the BeforeScaleDown steps")
			continue
		}
		if old := rsReplicas(rs); old != want {
			c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRevisionScaled, v1alpha1.MsgRevisionScaled, rs.Name, old, want)
			plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).WithField("replicas", want).Info("Scaled revision")
		}
	}
	return nil
}

// revisionsToPrune picks the revisions beyond revisionHistoryLimit: the oldest terminal
// revisions that run no pods (0 replicas in spec and status), never the latest nor the
// newest Complete one. revs is sorted oldest first.
func revisionsToPrune(revs []*appsv1.ReplicaSet, latestVersion int64, limit int32) []*appsv1.ReplicaSet {
	active := revision.NewestComplete(revs)
	var candidates []*appsv1.ReplicaSet
	for _, rs := range revs {
		n, _ := revision.Number(rs)
		if n == latestVersion || rs == active || !revision.Phase(rs).IsTerminal() {
			continue
		}
		if rsReplicas(rs) != 0 || rs.Status.Replicas != 0 {
			continue
		}
		candidates = append(candidates, rs)
	}
	if excess := len(candidates) - int(limit); excess > 0 {
		return candidates[:excess]
	}
	return nil
}

func (c *Controller) pruneRevisions(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) error {
	limit := v1alpha1.DefaultRevisionHistoryLimit
	if dc.Spec.RevisionHistoryLimit != nil {
		limit = *dc.Spec.RevisionHistoryLimit
	}
	for _, rs := range revisionsToPrune(revs, dc.Status.LatestVersion, limit) {
		// The precondition makes sure the ReplicaSet is the one this decision saw.
		policy := metav1.DeletePropagationBackground
		err := revisions.Client{Kube: c.kube}.Delete(ctx, rs, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &rs.UID, ResourceVersion: &rs.ResourceVersion},
			PropagationPolicy: &policy,
		})
		if apierrors.IsNotFound(err) {
			continue // pruned already; the cache had not seen it
		}
		if err != nil {
			return fmt.Errorf("pruning revision %s: %w", rs.Name, err)
		}
		c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRevisionPruned, v1alpha1.MsgRevisionPruned, rs.Name, limit)
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).Info("Pruned revision")
	}
	return nil
}

// deferScaleDown reports whether a BeforeScaleDown DeferPolicy of namespace ns selects
// pods with labels podLabels: a scale-down of such pods goes through the DeferPolicy
// controller, which runs the steps of the pods that go and lowers the replicas afterwards
// (docs/defer.md).
func (c *Controller) deferScaleDown(ns string, podLabels map[string]string) bool {
	if c.deferLister == nil {
		return false
	}
	policies, err := c.deferLister.DeferPolicies(ns).List(labels.Everything())
	if err != nil {
		return false
	}
	first, _ := v1alpha1.FirstSelecting(policies, v1alpha1.DeferBeforeScaleDown, podLabels)
	return first != nil
}
