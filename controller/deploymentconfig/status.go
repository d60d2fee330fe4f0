package deploymentconfig

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// computeStatus derives the DC's status from its revisions. dc has defaults applied and
// carries the status last written; latestVersion and details are kept as they are.
func computeStatus(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) v1alpha1.DeploymentConfigStatus {
	status := *dc.Status.DeepCopy()
	status.ObservedGeneration = dc.Generation
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.UpdatedReplicas = 0, 0, 0, 0
	for _, rs := range revs {
		status.Replicas += rs.Status.Replicas
		status.ReadyReplicas += rs.Status.ReadyReplicas
		status.AvailableReplicas += rs.Status.AvailableReplicas
	}
	status.UnavailableReplicas = max(0, status.Replicas-status.AvailableReplicas)
	status.Phase = ""
	switch {
	case latest != nil:
		status.UpdatedReplicas = latest.Status.Replicas
		status.Phase = revision.Phase(latest)
	case dc.Status.LatestVersion > 0 && createRefusal(dc) != nil:
		// The latest revision has no ReplicaSet: the apiserver refused it.
		status.Phase = v1alpha1.RevisionPhaseFailed
	}
	status.Selector = selectorString(dc)
	status.Frozen = frozenAt(dc, latest)

	available := metav1.Condition{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonMinimumReplicasUnavailable, ObservedGeneration: dc.Generation}
	required := minAvailable(dc)
	available.Message = fmt.Sprintf("%d of at least %d pods are available", status.AvailableReplicas, required)
	if status.AvailableReplicas >= required {
		available.Status, available.Reason = metav1.ConditionTrue, v1alpha1.ReasonMinimumReplicasAvailable
	}
	meta.SetStatusCondition(&status.Conditions, available)

	if p, ok := progressing(dc, latest); ok {
		meta.SetStatusCondition(&status.Conditions, p)
	}
	return status
}

// progressing is the Progressing condition for the latest revision; false when there is
// nothing to say yet (no revision and not paused).
func progressing(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) (metav1.Condition, bool) {
	c := metav1.Condition{Type: v1alpha1.ConditionProgressing, ObservedGeneration: dc.Generation}
	switch {
	case dc.Spec.Paused:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonPaused, "the DeploymentConfig is paused; no new revision starts until it is resumed"
	case latest == nil && dc.Status.LatestVersion == 0 && len(imagesWaiting(dc)) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonWaitingForImages, waitingForImagesMessage(imagesWaiting(dc))
	case latest == nil:
		return c, false
	default:
		switch revision.Phase(latest) {
		case v1alpha1.RevisionPhaseComplete:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete, fmt.Sprintf("revision %s is complete", latest.Name)
		case v1alpha1.RevisionPhaseFailed:
			c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRolloutFailed
			if revision.Cancelled(latest) {
				c.Reason = v1alpha1.ReasonRolloutCancelled
			}
			c.Message = fmt.Sprintf("revision %s failed", latest.Name)
			if s := revision.StatusReasonText(latest); s != "" {
				c.Message = fmt.Sprintf("revision %s: %s", latest.Name, s)
			}
			if frozenAt(dc, latest) != "" {
				c.Reason = v1alpha1.ReasonRolloutFrozen
				c.Message += "; " + fmt.Sprintf(v1alpha1.MsgRolloutFrozen, latest.Name)
			}
			c.Message += failureHookText(latest)
		default:
			c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonNewReplicaSetCreated
			c.Message = fmt.Sprintf("revision %s is rolling out (%s)", latest.Name, revision.Phase(latest))
			if reason, msg := revision.Waiting(latest); reason != "" {
				c.Reason, c.Message = reason, fmt.Sprintf("revision %s is waiting: %s", latest.Name, msg)
			}
		}
	}
	return c, true
}

// minAvailable is the number of available pods the Available condition asks for:
// spec.replicas − maxUnavailable for Rolling (rounded down, as the strategy does), and
// spec.replicas otherwise. A test DC runs no pods once its rollout ended.
func minAvailable(dc *v1alpha1.DeploymentConfig) int32 {
	if dc.Spec.Test {
		return 0
	}
	replicas := revision.ConfigReplicas(dc)
	s := dc.Spec.Strategy
	if s.Type != v1alpha1.DeploymentStrategyTypeRolling || s.RollingParams == nil || s.RollingParams.MaxUnavailable == nil {
		return replicas
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(s.RollingParams.MaxUnavailable, int(replicas), false)
	if err != nil {
		return replicas
	}
	return max(0, replicas-int32(unavailable))
}

// selectorString is the selector of the DC's own pods as a string, for the scale
// subresource and an HPA: the DC's selector, narrowed to the pods of its revisions (the
// config label, which every revision's pod template carries), without the deployer and
// hook pods. Two DCs with overlapping selectors never count each other's pods.
func selectorString(dc *v1alpha1.DeploymentConfig) string {
	sel := labels.NewSelector()
	if dc.Spec.Selector != nil {
		if user, err := metav1.LabelSelectorAsSelector(dc.Spec.Selector); err == nil {
			reqs, _ := user.Requirements()
			sel = sel.Add(reqs...)
		}
	}
	config, _ := labels.NewRequirement(v1alpha1.ConfigLabel, selection.Equals, []string{dc.Name})
	noHook, _ := labels.NewRequirement(v1alpha1.HookStageLabel, selection.DoesNotExist, nil)
	noDeployer, _ := labels.NewRequirement(v1alpha1.DeployerPodForLabel, selection.DoesNotExist, nil)
	return sel.Add(*config, *noHook, *noDeployer).String()
}

// updateStatus writes the status computed from the revisions when it differs from the
// cached one, at once or, mid-rollout, once the status interval since the last write is
// over (statuspace.go). A conflict is retried by the queue.
func (c *Controller) updateStatus(ctx context.Context, cached, dc *v1alpha1.DeploymentConfig,
	revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) error {
	if dc.Spec.StatefulSet != nil {
		revs, latest = c.withStatefulSetStatus(dc, revs, latest)
	}
	status := computeStatus(dc, revs, latest)
	if apiequality.Semantic.DeepEqual(cached.Status, status) {
		return nil
	}
	key := dc.Namespace + "/" + dc.Name
	if wait := c.pace.wait(key, &cached.Status, &status); wait > 0 {
		c.queue.AddAfter(key, wait) // the newest status then, in one write
		return nil
	}
	update := cached.DeepCopy()
	update.Status = status
	written, err := c.stagehand.StagehandV1alpha1().DeploymentConfigs(dc.Namespace).UpdateStatus(ctx, update, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("updating the status of %s: %w", dc.Name, err)
	}
	c.dcWrites.Wrote(key, cached.ResourceVersion, written.ResourceVersion)
	c.pace.wrote(key)
	if status.Frozen != "" && status.Frozen != cached.Status.Frozen {
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventRolloutFrozen, v1alpha1.MsgRolloutFrozen, status.Frozen)
		plumbing.SyncLog(c.log, dc.Namespace, dc.Name, status.Frozen).Warn("Rollout failed: the replicas are frozen (onFailure: Freeze)")
	}
	return nil
}

// failureHookText is what the Progressing condition of a Failed latest revision says about
// its failure hook: that it runs and the rollback waits, or how it ended.
func failureHookText(latest *appsv1.ReplicaSet) string {
	state, msg := v1alpha1.FailureHookStateOf(latest)
	switch {
	case revision.FailureHookPending(latest):
		return fmt.Sprintf("; its failed hook runs (pod %s), and the rollback waits for it", v1alpha1.FailureHookRunnerName(latest.Name))
	case state == v1alpha1.FailureHookSucceeded:
		return "; its failed hook succeeded"
	case state == v1alpha1.FailureHookNotRun:
		return "; its failed hook was not run: " + msg
	case state.Finished():
		return fmt.Sprintf("; its failed hook did not succeed (%s): %s", state, msg)
	}
	return ""
}
