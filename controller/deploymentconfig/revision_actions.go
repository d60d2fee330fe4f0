package deploymentconfig

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// startRevision bumps latestVersion and then creates the new revision (see
// syncDeploymentConfig for why in this order). cached is the DC from the cache, dc the
// same with defaults applied; revs are its revisions and latest the latest one (nil for
// the first); req is
// the pending Latest or Rollback request, or nil when a trigger starts the revision.
func (c *Controller) startRevision(ctx context.Context, cached, dc *v1alpha1.DeploymentConfig,
	revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet, req *v1alpha1.RolloutRequest) error {
	next := cached.Status.LatestVersion + 1
	cause := automaticCause(dc, latest, next)
	if req != nil {
		cause = requestCause(req)
	}
	bump := cached.DeepCopy()
	bump.Status.LatestVersion = next
	bump.Status.Details = cause.details()
	// The phase column describes the latest revision: N is New from now on, never the
	// previous revision's phase (invariant 7).
	bump.Status.Phase = v1alpha1.RevisionPhaseNew
	// The same write carries the whole status that revision N, New, will give once its
	// ReplicaSet exists, so the sync after the create has nothing left to write.
	if rs, err := newRevision(dc, next, cause); err == nil {
		withBump := dc.DeepCopy()
		withBump.Status = bump.Status
		bump.Status = computeStatus(withBump, append(revs[:len(revs):len(revs)], rs), rs)
	}
	updated, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(dc.Namespace).UpdateStatus(ctx, bump, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("bumping latestVersion of %s to %d: %w", dc.Name, next, err)
	}
	c.dcWrites.Wrote(dc.Namespace+"/"+dc.Name, cached.ResourceVersion, updated.ResourceVersion)
	c.pace.wrote(dc.Namespace + "/" + dc.Name)
	dc = dc.DeepCopy()
	dc.ObjectMeta = updated.ObjectMeta
	dc.Status = updated.Status
	_, err = c.createRevision(ctx, dc, next, cause)
	if plumbing.Refused(err) {
		key, _ := cache.MetaNamespaceKeyFunc(dc)
		return c.refuseRevision(ctx, key, updated, dc, revs, next, err)
	}
	return err
}

// createRevision creates revision n. An existing ReplicaSet of that name that this DC
// controls is adopted as it is (a retry, or a cache that has not seen it yet).
func (c *Controller) createRevision(ctx context.Context, dc *v1alpha1.DeploymentConfig, n int64,
	cause revisionCause) (*appsv1.ReplicaSet, error) {
	rs, err := newRevision(dc, n, cause)
	if err != nil {
		return nil, plumbing.Fatal(err)
	}
	created, err := revisions.Client{Kube: c.kube}.Create(ctx, rs, plumbing.CreateOptions())
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := revisions.Client{Kube: c.kube}.Get(ctx, dc.Namespace, rs.Name, revision.OfStatefulSet(rs))
		if getErr != nil {
			return nil, fmt.Errorf("reading the existing revision %s: %w", rs.Name, getErr)
		}
		if ref := metav1.GetControllerOfNoCopy(existing); ref == nil || ref.UID != dc.UID {
			return nil, fmt.Errorf("ReplicaSet %s exists but does not belong to DeploymentConfig %s; delete or rename it", rs.Name, dc.Name)
		}
		return existing, nil
	}
	if err != nil {
		return nil, fmt.Errorf("creating revision %s: %w", rs.Name, err)
	}
	c.metrics.RolloutStarted(string(dc.Spec.Strategy.Type))
	c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRevisionCreated, v1alpha1.MsgRevisionCreated, created.Name, cause.Message)
	plumbing.SyncLog(c.log, dc.Namespace, dc.Name, created.Name).WithField("cause", cause.Type).Info("Created revision")
	return created, nil
}

// stopRevision cancels a non-terminal revision: one Update marks it cancelled and Failed
// with the reason (Superseded or Cancelled), then its deployer and hook pods are deleted.
// Marking it terminal first means that no deployer pod is created for it from then on,
// and that at most one revision is not terminal even if the controller stops right here.
func (c *Controller) stopRevision(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, reason string) error {
	t := phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: reason, Cancel: true,
		Msg: "cancelled by the user; the previous revision serves again"}
	event, msg := v1alpha1.EventRevisionCancelled, v1alpha1.MsgRevisionCancelled
	if reason == v1alpha1.ReasonSuperseded {
		t.Msg = "superseded by a newer revision"
		event, msg = v1alpha1.EventRevisionSuperseded, v1alpha1.MsgRevisionSuperseded
	}
	updated, err := phase.Write(ctx, c.kube, rs, t)
	if err != nil {
		return err
	}
	if updated != nil {
		c.rsWrites.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
		c.recorder.Eventf(dc, corev1.EventTypeNormal, event, msg, rs.Name)
		phase.RecordFinished(c.metrics, rs, t)
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).WithField("reason", reason).Info("Stopped revision")
	}
	return phase.DeletePods(ctx, c.kube, rs)
}

// deployerSettled asks the apiserver (not the cache) whether a terminal revision's
// deployer pod is out of the way, so that the next revision's deployer may start. It is
// when the pod is gone, or when it finished and the revision was not cancelled (a finished
// pod is kept for its logs). A deployer pod that still runs for a terminal revision, or any
// pod of a cancelled one, is deleted.
//
// One answer needs no request: a pod that the cache already shows finished (and not
// being deleted) stays finished, since a deployer pod never restarts, so for a revision
// that was neither cancelled nor retried the cache is enough. That is the usual case, the previous
// rollout long over, and it keeps a GET off the path from spec change to ReplicaSet.
func (c *Controller) deployerSettled(ctx context.Context, rs *appsv1.ReplicaSet) (bool, error) {
	// A retried revision's cache could still hold the pod of the run before the retry.
	if !revision.Retried(rs) && !revision.Cancelled(rs) {
		cached, err := c.podLister.Pods(rs.Namespace).Get(v1alpha1.DeployerPodName(rs.Name))
		if err == nil && revision.IsDeployerPodOf(rs, cached) && cached.DeletionTimestamp == nil &&
			podstatus.Finished(cached) {
			return true, nil
		}
	}
	pod, err := c.kube.CoreV1().Pods(rs.Namespace).Get(ctx, v1alpha1.DeployerPodName(rs.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the deployer pod of %s: %w", rs.Name, err)
	}
	if !revision.IsDeployerPodOf(rs, pod) {
		return true, nil // a pod of that name that is not Stagehand's is never touched
	}
	finished := podstatus.Finished(pod)
	if finished && !revision.Cancelled(rs) && pod.DeletionTimestamp == nil {
		return true, nil
	}
	if pod.DeletionTimestamp == nil {
		if err := phase.DeletePods(ctx, c.kube, rs); err != nil {
			return false, err
		}
	}
	return false, nil
}

// deployerFinishedInCache reports, from the cache, whether a terminal revision's deployer
// pod is gone or finished, so that the controller's scaling does not race the deployer.
func (c *Controller) deployerFinishedInCache(rs *appsv1.ReplicaSet) bool {
	pod, err := c.podLister.Pods(rs.Namespace).Get(v1alpha1.DeployerPodName(rs.Name))
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	if !revision.IsDeployerPodOf(rs, pod) {
		return true
	}
	return pod.DeletionTimestamp == nil && podstatus.Finished(pod)
}
