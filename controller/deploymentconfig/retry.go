package deploymentconfig

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// A retry runs every hook of the revision again (DESIGN.md §4 invariant 11): before the
// reset to New, the revision's deployer, runner and hook pods and its exec hooks'
// ExecutionHooks are deleted, so that the new deployer finds no hook that "already
// succeeded". Within one run the deployer stays idempotent: a deployer run again for the
// same run adopts the hook pods and ExecutionHooks of that run by their names.

// retryWaits reports whether a pending retry of rs must wait: its failure hook has not
// finished (docs/hooks.md, "Retry"). The retry then starts once the hook has ended, which
// brings the DC back; a Normal event says so.
func (c *Controller) retryWaits(dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet) bool {
	if !revision.FailureHookPending(rs) {
		return false
	}
	c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRetryWaitsForFailureHook, v1alpha1.MsgRetryWaitsForFailureHook, rs.Name)
	plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).Info("The retry waits for the failed hook")
	return true
}

// retryRevision runs a Failed latest revision again. Its deployer and hook pods and its
// ExecutionHooks are deleted first, and it is reset to New only once the apiserver no
// longer has them, so that the new deployer pod (same name) is a new pod and the new hook
// pods and ExecutionHooks do not find the failed run's. The reset is one Update with the
// cached resourceVersion; it carries the request's ID, which makes the request done.
func (c *Controller) retryRevision(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet,
	req *v1alpha1.RolloutRequest) error {
	left, err := c.revisionPodsLeft(ctx, rs)
	if err != nil {
		return err
	}
	hooks, err := c.execHooksOf(ctx, rs)
	if err != nil {
		return err
	}
	if left > 0 || len(hooks) > 0 {
		if err := phase.DeletePods(ctx, c.kube, rs); err != nil {
			return err
		}
		if err := c.deleteExecHooks(ctx, hooks); err != nil {
			return err
		}
		return plumbing.RequeueAfter(time.Second, "waiting for the failed rollout's pods and ExecutionHooks to go away before the retry")
	}
	reset := rs.DeepCopy()
	reset.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseNew)
	reset.Annotations[v1alpha1.RequestAnnotation] = req.ID
	reset.Annotations[v1alpha1.RetriedAtAnnotation] = revision.FormatRetriedAt(time.Now())
	delete(reset.Annotations, v1alpha1.StatusReasonAnnotation)
	delete(reset.Annotations, v1alpha1.CancelledAnnotation)
	v1alpha1.ClearSteps(reset.Annotations)                    // a retry runs the steps again from step 1
	delete(reset.Annotations, v1alpha1.FailureHookAnnotation) // and a new failure runs the hook again
	written, err := revisions.Client{Kube: c.kube}.Update(ctx, reset, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("resetting revision %s to New for a retry: %w", rs.Name, err)
	}
	c.rsWrites.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, written.ResourceVersion)
	c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventRolloutRetried, v1alpha1.MsgRolloutRetried, rs.Name)
	c.metrics.RolloutStarted(phase.StrategyOf(rs))
	plumbing.SyncLog(c.log, dc.Namespace, dc.Name, rs.Name).Info("Retrying the failed revision")
	return nil
}

// revisionPodsLeft counts, in the apiserver, the deployer and hook pods that the revision
// owns. A pod of the deployer pod's name that it does not own is not counted: it is never
// deleted, and the retried revision fails again with DeployerPodNameTaken.
func (c *Controller) revisionPodsLeft(ctx context.Context, rs *appsv1.ReplicaSet) (int, error) {
	pods := c.kube.CoreV1().Pods(rs.Namespace)
	n := 0
	deployer, err := pods.Get(ctx, v1alpha1.DeployerPodName(rs.Name), metav1.GetOptions{})
	switch {
	case err == nil:
		if revision.IsDeployerPodOf(rs, deployer) {
			n++
		}
	case !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("reading the deployer pod of %s: %w", rs.Name, err)
	}
	// A runner exists only once the revision records its failure hook: no read before.
	runner, err := phase.FailureHookRunner(ctx, pods, rs)
	switch {
	case err == nil:
		if revision.IsFailureHookRunnerOf(rs, runner) {
			n++
		}
	case !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("reading the failure-hook runner of %s: %w", rs.Name, err)
	}
	hooks, err := pods.List(ctx, metav1.ListOptions{LabelSelector: revision.HookPods(rs, "").String()})
	if err != nil {
		return 0, fmt.Errorf("listing the hook pods of %s: %w", rs.Name, err)
	}
	for i := range hooks.Items {
		if revision.Owns(rs, &hooks.Items[i]) {
			n++
		}
	}
	return n, nil
}

// execHooksOf lists, in the apiserver, the ExecutionHooks of rs's exec hooks: those that
// carry its exec-hook-of label and that it owns.
func (c *Controller) execHooksOf(ctx context.Context, rs *appsv1.ReplicaSet) ([]v1alpha1.ExecutionHook, error) {
	list, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(rs.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.ExecHookOfLabel: rs.Name}).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the ExecutionHooks of %s: %w", rs.Name, err)
	}
	var owned []v1alpha1.ExecutionHook
	for i := range list.Items {
		if revision.Owns(rs, &list.Items[i]) {
			owned = append(owned, list.Items[i])
		}
	}
	return owned, nil
}

// deleteExecHooks deletes the ExecutionHooks of a revision's previous run, each with a UID
// precondition. Their HookActions stay: the retried run adopts them (the same snapshot
// gives the same command), and the revision's pruning removes them.
func (c *Controller) deleteExecHooks(ctx context.Context, hooks []v1alpha1.ExecutionHook) error {
	for i := range hooks {
		h := &hooks[i]
		if h.DeletionTimestamp != nil {
			continue
		}
		err := c.stagehand.StagehandV1alpha1().ExecutionHooks(h.Namespace).Delete(ctx, h.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(h.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting the ExecutionHook %s before the retry: %w", h.Name, err)
		}
	}
	return nil
}
