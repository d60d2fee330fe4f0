package deploymentconfig

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// createRefusal is the Progressing condition that records that the apiserver refused the
// latest revision's ReplicaSet for the DC's current generation, or nil. While it holds,
// the revision counts as Failed and its ReplicaSet is not created again; a change of the
// spec (a new generation) tries again.
func createRefusal(dc *v1alpha1.DeploymentConfig) *metav1.Condition {
	c := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionProgressing)
	if c == nil || c.Reason != v1alpha1.ReasonRevisionCreateFailed || c.ObservedGeneration != dc.Generation {
		return nil
	}
	return c
}

// refusal is a revision whose ReplicaSet the apiserver refused, for one generation of the DC.
type refusal struct {
	revision   int64
	generation int64
	message    string
}

// rememberedRefusal is the refusal remembered for key that still applies to dc (the same
// latest revision and generation), or nil.
func (c *Controller) rememberedRefusal(key string, dc *v1alpha1.DeploymentConfig) *refusal {
	v, ok := c.refusals.Load(key)
	if !ok {
		return nil
	}
	r := v.(*refusal)
	if r.revision != dc.Status.LatestVersion || r.generation != dc.Generation {
		c.refusals.Delete(key)
		return nil
	}
	return r
}

// refuseRevision fails revision n, whose ReplicaSet the apiserver refused for good
// (DESIGN.md §4 invariant 7), with one Warning event, and writes the status. It is
// remembered until the status is written, so a sync on a cache that has not seen the
// write yet neither creates the ReplicaSet again nor records a second event.
func (c *Controller) refuseRevision(ctx context.Context, key string, base, dc *v1alpha1.DeploymentConfig,
	revs []*appsv1.ReplicaSet, n int64, createErr error) error {
	name := v1alpha1.RevisionName(dc.Name, n)
	r := &refusal{revision: n, generation: dc.Generation,
		message: podstatus.TruncateEnd(fmt.Sprintf("the apiserver refused the ReplicaSet of revision %s: %s", name, plumbing.APIMessage(createErr)), v1alpha1.MaxStatusMessage)}
	c.refusals.Store(key, r)
	c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventRevisionCreateFailed, v1alpha1.MsgRevisionCreateFailed, name, plumbing.APIMessage(createErr))
	plumbing.SyncLog(c.log, dc.Namespace, dc.Name, name).WithError(createErr).Warn("The apiserver refused the revision's ReplicaSet; the revision failed")
	return c.writeRefusal(ctx, base, dc, revs, r)
}

// writeRefusal scales the revisions as after any failed rollout (the newest Complete one
// serves) and writes the status of a refused revision: phase Failed and the Progressing
// condition RevisionCreateFailed with the apiserver's message. base is the DC as last read
// or written, for the status update.
func (c *Controller) writeRefusal(ctx context.Context, base, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, r *refusal) error {
	if err := c.scaleRevisions(ctx, dc, revs); err != nil {
		return err
	}
	withStatus := dc.DeepCopy()
	withStatus.Status = base.Status
	status := computeStatus(withStatus, revs, nil)
	status.Phase = v1alpha1.RevisionPhaseFailed
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRevisionCreateFailed, Message: r.message, ObservedGeneration: dc.Generation})
	update := base.DeepCopy()
	update.Status = status
	if _, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(dc.Namespace).UpdateStatus(ctx, update, plumbing.UpdateOptions()); err != nil {
		return fmt.Errorf("recording that revision %s could not be created: %w", v1alpha1.RevisionName(dc.Name, r.revision), err)
	}
	return nil
}
