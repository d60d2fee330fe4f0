package deploymentconfig

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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
