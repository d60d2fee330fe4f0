package deferpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// The reasons of the condition stagehand.dev/DeferSteps on an EvictionRequest.
const (
	stepsWaiting     = "Waiting"
	stepsRunning     = "Running"
	stepsCompleted   = "Completed"
	stepsBlocked     = "Blocked"
	stepsCanceled    = "Canceled"
	stepsInterrupted = "Interrupted"
)

// mirror writes on each request what the Eviction says: Stagehand's responder status,
// heartbeat included, as the condition stagehand.dev/DeferSteps (an EvictionRequest's
// status has no other place for it), and, for an Eviction Stagehand drives, its Failed
// and TargetEvicted conditions, as an evictionrequest-controller would.
func (c *Controller) mirror(ctx context.Context, reqs []*lifecyclev1alpha1.EvictionRequest, ev *lifecyclev1alpha1.Eviction) error {
	driven := ev.Labels[v1alpha1.EvictionDriverLabel] == "true"
	for _, r := range reqs {
		cp := r.DeepCopy()
		changed := false
		if cond, ok := stepsCondition(ev, r.Generation); ok {
			changed = setCondition(&cp.Status.Conditions, cond)
		}
		if driven {
			for _, t := range []lifecyclev1alpha1.EvictionConditionType{lifecyclev1alpha1.EvictionConditionFailed, lifecyclev1alpha1.EvictionConditionTargetEvicted} {
				if cond := meta.FindStatusCondition(ev.Status.Conditions, string(t)); cond != nil {
					changed = setCondition(&cp.Status.Conditions, metav1.Condition{Type: cond.Type, Status: cond.Status,
						Reason: cond.Reason, Message: cond.Message, ObservedGeneration: r.Generation}) || changed
				} else if meta.RemoveStatusCondition(&cp.Status.Conditions, string(t)) {
					changed = true // a new intent after a failure starts again
				}
			}
			if ptr.Deref(cp.Status.ObservedGeneration, 0) != r.Generation {
				cp.Status.ObservedGeneration, changed = ptr.To(r.Generation), true
			}
		}
		if !changed {
			continue
		}
		if err := c.writeRequest(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// evictedAnyway tells the requests that Stagehand answered (they carry its condition) for
// the pod name, gone or stopped, that their target was evicted, when the garbage collector
// took the pod's Eviction with the pod before the driver could say so there.
func (c *Controller) evictedAnyway(ctx context.Context, allReqs []*lifecyclev1alpha1.EvictionRequest, pod *corev1.Pod, name, reason, message string) error {
	evicted := string(lifecyclev1alpha1.EvictionConditionTargetEvicted)
	for _, r := range allReqs {
		t := r.Spec.Target.Pod
		if t == nil || t.Name != name || (pod != nil && t.UID != pod.UID) || r.DeletionTimestamp != nil ||
			meta.FindStatusCondition(r.Status.Conditions, v1alpha1.EvictionRequestConditionDeferSteps) == nil ||
			meta.IsStatusConditionTrue(r.Status.Conditions, evicted) {
			continue
		}
		cp := r.DeepCopy()
		setCondition(&cp.Status.Conditions, metav1.Condition{Type: evicted, Status: metav1.ConditionTrue,
			Reason: reason, Message: message, ObservedGeneration: r.Generation})
		if err := c.writeRequest(ctx, cp); err != nil {
			return err
		}
	}
	return nil
}

// writeRequest writes r's status. A conflict is retried from a fresh cache.
func (c *Controller) writeRequest(ctx context.Context, r *lifecyclev1alpha1.EvictionRequest) error {
	_, err := c.kube.LifecycleV1alpha1().EvictionRequests(r.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(200*time.Millisecond, "the EvictionRequest changed; reading it again")
	case err != nil:
		return fmt.Errorf("writing the status of EvictionRequest %s: %w", r.Name, err)
	}
	return nil
}

// setCondition sets cond and reports whether that changed anything a reader sees.
func setCondition(conds *[]metav1.Condition, cond metav1.Condition) bool {
	old := meta.FindStatusCondition(*conds, cond.Type)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return false
	}
	meta.SetStatusCondition(conds, cond)
	return true
}

// stepsCondition is the condition stagehand.dev/DeferSteps for Stagehand's responder in
// ev; false when ev does not list it.
func stepsCondition(ev *lifecyclev1alpha1.Eviction, generation int64) (metav1.Condition, bool) {
	state := stateOf(&ev.Status, v1alpha1.EvictionResponderName)
	rs := responderStatus(&ev.Status, v1alpha1.EvictionResponderName)
	if state == "" || rs == nil {
		return metav1.Condition{}, false
	}
	cond := metav1.Condition{Type: v1alpha1.EvictionRequestConditionDeferSteps, Status: metav1.ConditionFalse,
		ObservedGeneration: generation, Message: ptr.Deref(rs.Message, "")}
	switch {
	case state == lifecyclev1alpha1.ResponderStateInactive:
		cond.Reason, cond.Message = stepsWaiting, "waiting for the responders of higher priority"
	case rs.CompletionTime != nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, stepsCompleted
	case state == lifecyclev1alpha1.ResponderStateActive:
		cond.Reason = stepsRunning
	case state == lifecyclev1alpha1.ResponderStateCanceled:
		cond.Reason = stepsCanceled
	case isBlocked(ev):
		cond.Reason = stepsBlocked
	default:
		cond.Reason = stepsInterrupted
	}
	if cond.Message == "" {
		cond.Message = "Eviction " + ev.Name
	}
	if rs.HeartbeatTime != nil {
		cond.Message += "; last heartbeat " + rs.HeartbeatTime.UTC().Format(time.RFC3339)
	}
	return cond, true
}

// isBlocked reports whether Stagehand's responder blocked ev.
func isBlocked(ev *lifecyclev1alpha1.Eviction) bool {
	cond := meta.FindStatusCondition(ev.Status.Conditions, string(lifecyclev1alpha1.EvictionConditionFailed))
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == reasonBlocked
}
