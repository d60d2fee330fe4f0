package deploymentconfig

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// revisionCause is why a revision is created, as it is recorded on the revision.
type revisionCause struct {
	Type       v1alpha1.DeploymentCauseType
	RollbackTo int64  // for a rollback: the revision whose spec it runs
	RequestID  string // for a manual rollout or a rollback: the request's ID
	ImageFrom  string // for an image change: the watched tag
	ImageTo    string // for an image change: the digest reference it moved to
	Message    string // status.details.message
}

// details is the status.details of a revision with this cause.
func (c revisionCause) details() *v1alpha1.DeploymentDetails {
	cause := v1alpha1.DeploymentCause{Type: c.Type}
	if c.ImageFrom != "" {
		cause.ImageTrigger = &v1alpha1.DeploymentCauseImageTrigger{From: v1alpha1.ImageReference{Image: c.ImageFrom}}
	}
	return &v1alpha1.DeploymentDetails{Message: c.Message, Causes: []v1alpha1.DeploymentCause{cause}}
}

// configChange is the cause of a revision that the ConfigChange trigger starts.
func configChange(next int64) revisionCause {
	if next == 1 {
		return revisionCause{Type: v1alpha1.DeploymentCauseConfigChange, Message: "first rollout"}
	}
	return revisionCause{Type: v1alpha1.DeploymentCauseConfigChange, Message: "config change"}
}

// requestCause is the cause of the revision that a Latest or Rollback request creates.
func requestCause(req *v1alpha1.RolloutRequest) revisionCause {
	c := revisionCause{Type: req.Cause(), RequestID: req.ID, Message: req.Message}
	if req.Action == v1alpha1.RolloutRequestRollback {
		c.RollbackTo = req.RollbackTo
		if c.Message == "" {
			c.Message = fmt.Sprintf("rollback to revision %d", req.RollbackTo)
		}
	}
	if c.Message == "" {
		c.Message = "manual rollout"
	}
	return c
}

// causeOf is the cause of the latest revision as the status records it, for a revision
// whose ReplicaSet is created after latestVersion was bumped (step 1). When a request led
// to that bump, it is still on the DC and gives the rest of the cause.
func causeOf(dc *v1alpha1.DeploymentConfig, req *v1alpha1.RolloutRequest) revisionCause {
	c := configChange(dc.Status.LatestVersion)
	if d := dc.Status.Details; d != nil && len(d.Causes) > 0 {
		c.Type, c.Message = d.Causes[0].Type, d.Message
		if it := d.Causes[0].ImageTrigger; it != nil {
			c.ImageFrom = it.From.Image
			for _, p := range dc.ImageTriggers() {
				if p.From.Image == c.ImageFrom {
					c.ImageTo = p.LastTriggeredImage
				}
			}
		}
	}
	if req != nil && req.Action != v1alpha1.RolloutRequestRetry &&
		req.LatestVersion+1 == dc.Status.LatestVersion && req.Cause() == c.Type {
		c = requestCause(req)
	}
	return c
}

// annotate records the cause on a new revision.
func (c revisionCause) annotate(annotations map[string]string) {
	annotations[v1alpha1.CauseAnnotation] = string(c.Type)
	if c.RequestID != "" {
		annotations[v1alpha1.RequestAnnotation] = c.RequestID
	}
	if c.RollbackTo > 0 {
		annotations[v1alpha1.RollbackToAnnotation] = strconv.FormatInt(c.RollbackTo, 10)
	}
	if c.ImageFrom != "" {
		annotations[v1alpha1.ImageTriggerAnnotation] = revision.FormatImageTrigger(c.ImageFrom, c.ImageTo)
	}
}

// rolloutRequest reads the DC's rollout-request annotation. A value that does not parse is
// reported as a Warning event and otherwise ignored: it must not stop the DC's rollouts.
func (c *Controller) rolloutRequest(dc *v1alpha1.DeploymentConfig) *v1alpha1.RolloutRequest {
	req, err := v1alpha1.ParseRolloutRequest(dc)
	if err != nil {
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventInvalidRolloutRequest, v1alpha1.MsgInvalidRolloutRequest, err)
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, "").WithError(err).Warn("Ignoring an invalid rollout request")
		return nil
	}
	return req
}

// pendingCreate returns req when it is a Latest or Rollback request that no revision
// answers yet, and nil otherwise.
func pendingCreate(dc *v1alpha1.DeploymentConfig, req *v1alpha1.RolloutRequest) *v1alpha1.RolloutRequest {
	if req == nil || req.Action == v1alpha1.RolloutRequestRetry || !revision.RequestPending(req, dc, nil) {
		return nil
	}
	return req
}

// pendingRetry reports whether req is a Retry of the latest revision that has not been
// acted on.
func pendingRetry(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet, req *v1alpha1.RolloutRequest) bool {
	return req != nil && req.Action == v1alpha1.RolloutRequestRetry && revision.RequestPending(req, dc, latest)
}

// retryRevision runs a Failed latest revision again. Its deployer and hook pods are
// deleted first, and it is reset to New only once the apiserver no longer has them, so
// that the new deployer pod (same name) is a new pod and the new hook pods do not find
// the failed ones. The reset is one Update with the cached resourceVersion; it carries the
// request's ID, which makes the request done.
func (c *Controller) retryRevision(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet,
	req *v1alpha1.RolloutRequest) error {
	left, err := c.revisionPodsLeft(ctx, rs)
	if err != nil {
		return err
	}
	if left > 0 {
		if err := phase.DeletePods(ctx, c.kube, rs); err != nil {
			return err
		}
		return plumbing.RequeueAfter(time.Second, "waiting for the failed rollout's pods to go away before the retry")
	}
	reset := rs.DeepCopy()
	reset.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseNew)
	reset.Annotations[v1alpha1.RequestAnnotation] = req.ID
	reset.Annotations[v1alpha1.RetriedAtAnnotation] = revision.FormatRetriedAt(time.Now())
	delete(reset.Annotations, v1alpha1.StatusReasonAnnotation)
	delete(reset.Annotations, v1alpha1.CancelledAnnotation)
	v1alpha1.ClearSteps(reset.Annotations)                    // a retry runs the steps again from step 1
	delete(reset.Annotations, v1alpha1.FailureHookAnnotation) // and a new failure runs the hook again
	written, err := c.kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, reset, plumbing.UpdateOptions())
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
