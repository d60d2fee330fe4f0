package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// How often a notifier's receivers are checked again: while it is not Ready a Secret may
// be created, or the controller granted its read; while it is Ready a Secret may go.
const (
	notReadyRecheck = 30 * time.Second
	readyRecheck    = 5 * time.Minute
)

// needsJudging reports whether a notifier's Ready condition is judged again now: when it
// has none, when its spec changed since, and when the recheck interval for its state has
// passed since it was last judged (at judged; zero: not by this process).
func needsJudging(n *v1alpha1.RolloutNotifier, ready *metav1.Condition, judged, now time.Time) bool {
	switch {
	case ready == nil || n.Status.ObservedGeneration != n.Generation || judged.IsZero():
		return true
	case ready.Status != metav1.ConditionTrue:
		return !now.Before(judged.Add(notReadyRecheck))
	}
	return !now.Before(judged.Add(readyRecheck))
}

// syncNotifier writes a notifier's status: its receipts counted by result, and Ready,
// which says whether every receiver can be sent to. Ready is judged again when the spec
// changed, every notReadyRecheck while it is not True and every readyRecheck while it is
// (needsJudging); a receipt's change, which only counts, reads no Secret.
func (c *Controller) syncNotifier(ctx context.Context, ns, name string) error {
	n, err := c.notifiers.RolloutNotifiers(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
		c.judged.forget(ns + "/" + name)
		return nil
	}
	if err != nil {
		return err
	}
	receipts, err := c.receipts.RolloutDeliveries(ns).List(labels.SelectorFromSet(labels.Set{NotifierLabel: name}))
	if err != nil {
		return err
	}
	cp := n.DeepCopy()
	cp.Status.Delivered, cp.Status.Failed = 0, 0
	for _, d := range receipts {
		switch d.Status.Phase {
		case v1alpha1.DeliveryDelivered:
			cp.Status.Delivered++
		case v1alpha1.DeliveryFailed:
			cp.Status.Failed++
		}
	}
	ready := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.NotifierConditionReady)
	now := c.now()
	if needsJudging(n, ready, c.judged.get(ns+"/"+name), now) {
		c.judged.set(ns+"/"+name, now)
		cond := metav1.Condition{Type: v1alpha1.NotifierConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReceiversReady,
			Message: "every receiver's Secrets can be read and its template parses", ObservedGeneration: n.Generation}
		if reason, msg := c.unready(ctx, n); reason != "" {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, msg
		}
		if ready == nil || ready.Status != cond.Status || ready.Message != cond.Message {
			if cond.Status == metav1.ConditionFalse {
				c.recorder.Event(n, corev1.EventTypeWarning, v1alpha1.EventNotifierNotReady, cond.Message)
			}
		}
		meta.SetStatusCondition(&cp.Status.Conditions, cond)
		cp.Status.ObservedGeneration = n.Generation
	}
	if !equality.Semantic.DeepEqual(cp.Status, n.Status) {
		_, err := c.stagehand.StagehandV1alpha1().RolloutNotifiers(ns).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return plumbing.RequeueAfter(100*time.Millisecond, "the notifier changed; reading it again")
		case err != nil:
			return fmt.Errorf("writing the status of notifier %s: %w", name, err)
		}
	}
	if cond := meta.FindStatusCondition(cp.Status.Conditions, v1alpha1.NotifierConditionReady); cond != nil && cond.Status != metav1.ConditionTrue {
		return plumbing.RequeueAfter(notReadyRecheck, "the notifier is not Ready; checking its receivers again")
	}
	return plumbing.RequeueAfter(readyRecheck, "checking the receivers of a Ready notifier again")
}

// unready is the reason and message of the first receiver that cannot be sent to, or "".
func (c *Controller) unready(ctx context.Context, n *v1alpha1.RolloutNotifier) (reason, message string) {
	for _, r := range n.Spec.Receivers {
		_, err := c.target(ctx, n, r.Name)
		var permanent *permanentError
		switch {
		case err == nil:
			continue
		case errors.As(err, &permanent):
			return v1alpha1.ReasonTemplateInvalid, err.Error()
		case apierrors.IsForbidden(err):
			return v1alpha1.ReasonSecretUnreadable, "receiver " + r.Name + ": " + err.Error() +
				"; the controller reads a receiver's Secrets only where deploy/rbac/controller-notifier-secrets.yaml is installed (docs/notifications.md)"
		default:
			return v1alpha1.ReasonSecretUnreadable, "receiver " + r.Name + ": " + err.Error()
		}
	}
	return "", ""
}

// judgedTimes are when this process last judged each notifier's Ready condition.
type judgedTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (j *judgedTimes) get(key string) time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.at[key]
}

func (j *judgedTimes) set(key string, t time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.at == nil {
		j.at = map[string]time.Time{}
	}
	j.at[key] = t
}

func (j *judgedTimes) forget(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.at, key)
}
