package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// NotifierLabel on a receipt names its notifier; ConfigLabel and RevisionLabel its DC and
// revision, for kubectl stagehand get and rollout history.
const NotifierLabel = v1alpha1.GroupName + "/notifier"

var notifierKind = schema.GroupVersionKind{Group: v1alpha1.GroupName, Version: "v1alpha1", Kind: "RolloutNotifier"}

// syncConfig records a receipt for every (revision, event, receiver) of the DC that a
// notifier subscribes to and that has none yet. Creating it is the point where a second
// controller's detection of the same event stops: its Create finds the receipt there.
func (c *Controller) syncConfig(ctx context.Context, ns, name string) error {
	dc, err := c.dcs.DeploymentConfigs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	notifiers, err := c.notifiers.RolloutNotifiers(ns).List(labels.Everything())
	if err != nil || len(notifiers) == 0 {
		return err
	}
	all, err := c.revs.ReplicaSets(ns).List(labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: name}))
	if err != nil {
		return err
	}
	revs := revision.Owned(dc.UID, all)
	happened := Happened(dc, revs, c.failures.of(dc, revs))
	for _, n := range notifiers {
		sel, err := metav1.LabelSelectorAsSelector(n.Spec.Selector)
		if err != nil || n.DeletionTimestamp != nil || !sel.Matches(labels.Set(dc.Labels)) {
			continue
		}
		for _, occ := range happened {
			// A notifier tells of the revisions that start after it, not of the history.
			if !subscribed(n, occ.Payload.Event) || occ.Revision.CreationTimestamp.Before(&n.CreationTimestamp) {
				continue
			}
			for _, r := range n.Spec.Receivers {
				if err := c.record(ctx, n, r.Name, occ); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func subscribed(n *v1alpha1.RolloutNotifier, e v1alpha1.NotifyEvent) bool {
	for _, want := range n.Spec.Events {
		if want == e {
			return true
		}
	}
	return false
}

// record creates the receipt of occ for receiver, unless it exists.
func (c *Controller) record(ctx context.Context, n *v1alpha1.RolloutNotifier, receiver string, occ Occurrence) error {
	name := DeliveryName(n.Name, occ.Revision.Name, occ.Payload.Event, receiver)
	if _, err := c.receipts.RolloutDeliveries(n.Namespace).Get(name); err == nil {
		return nil
	}
	p := occ.Payload
	p.Key = Key(n.Namespace, name)
	payload, err := json.Marshal(p)
	if err != nil {
		return plumbing.Fatal(fmt.Errorf("encoding the payload of %s: %w", name, err))
	}
	d := &v1alpha1.RolloutDelivery{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: n.Namespace,
			Labels: map[string]string{NotifierLabel: n.Name, v1alpha1.ConfigLabel: p.DeploymentConfig,
				v1alpha1.RevisionLabel: occ.Revision.Labels[v1alpha1.RevisionLabel]},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(n, notifierKind)},
		},
		Spec: v1alpha1.RolloutDeliverySpec{Notifier: n.Name, Receiver: receiver, Revision: occ.Revision.Name,
			Event: p.Event, Key: p.Key, Payload: string(payload)},
	}
	_, err = c.stagehand.StagehandV1alpha1().RolloutDeliveries(n.Namespace).Create(ctx, d, plumbing.CreateOptions())
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording delivery %s: %w", name, err)
	}
	return nil
}

// syncDelivery makes the next attempt of a receipt that is not done, when it is due: it
// writes Sending before the POST and the answer after it. A receipt found Sending (a crash
// between the two writes) is sent again with the same key.
func (c *Controller) syncDelivery(ctx context.Context, ns, name string) error {
	d, err := c.receipts.RolloutDeliveries(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || d.Status.Phase == v1alpha1.DeliveryDelivered || d.Status.Phase == v1alpha1.DeliveryFailed {
		return err
	}
	n, err := c.notifiers.RolloutNotifiers(ns).Get(d.Spec.Notifier)
	if apierrors.IsNotFound(err) {
		return nil // its receipts go with it (ownerReference)
	}
	if err != nil {
		return err
	}
	now := c.now()
	if deadline := d.CreationTimestamp.Add(time.Duration(deadlineSeconds(n)) * time.Second); now.After(deadline) {
		return c.fail(ctx, d, fmt.Sprintf("no 2xx answer within %ds: %s", deadlineSeconds(n), d.Status.Message))
	}
	if next := d.Status.NextAttemptTime; next != nil && next.After(now) {
		return plumbing.RequeueAfter(next.Sub(now), "the next attempt is not due yet")
	}
	target, err := c.target(ctx, n, d.Spec.Receiver)
	if err != nil {
		if permanent, ok := err.(*permanentError); ok {
			return c.fail(ctx, d, permanent.Error())
		}
		return c.answered(ctx, d, Answer{Message: err.Error()})
	}
	var p Payload
	if err := json.Unmarshal([]byte(d.Spec.Payload), &p); err != nil {
		return c.fail(ctx, d, "its payload does not read: "+err.Error())
	}
	body, err := Body(target, p)
	if err != nil {
		return c.fail(ctx, d, err.Error())
	}
	sending := d.DeepCopy()
	sending.Status.Phase = v1alpha1.DeliverySending
	sending.Status.Attempts++
	sending.Status.LastAttemptTime = &metav1.Time{Time: now}
	sending.Status.NextAttemptTime = nil
	written, err := c.writeStatus(ctx, sending)
	if err != nil || written == nil {
		return err
	}
	return c.answered(ctx, written, Post(ctx, c.http, target, d.Spec.Key, body, c.attemptTimeout))
}

// answered records an attempt's answer: Delivered, or Pending until the next attempt.
func (c *Controller) answered(ctx context.Context, d *v1alpha1.RolloutDelivery, a Answer) error {
	cp := d.DeepCopy()
	cp.Status.ResponseCode = int32(a.Code)
	cp.Status.Message = truncate(a.Message)
	if a.Delivered() {
		cp.Status.Phase = v1alpha1.DeliveryDelivered
		cp.Status.DeliveredTime = &metav1.Time{Time: c.now()}
		if _, err := c.writeStatus(ctx, cp); err != nil {
			return err
		}
		c.metrics.NotificationFinished("delivered")
		return nil
	}
	cp.Status.Phase = v1alpha1.DeliveryPending
	delay := Delay(max(cp.Status.Attempts, 1))
	cp.Status.NextAttemptTime = &metav1.Time{Time: c.now().Add(delay)}
	if _, err := c.writeStatus(ctx, cp); err != nil {
		return err
	}
	c.metrics.NotificationFinished("retried")
	return plumbing.RequeueAfter(delay, "the receiver did not take it; trying again")
}

// fail marks a receipt Failed, with a Warning event on its DC.
func (c *Controller) fail(ctx context.Context, d *v1alpha1.RolloutDelivery, why string) error {
	cp := d.DeepCopy()
	cp.Status.Phase = v1alpha1.DeliveryFailed
	cp.Status.Message = truncate(why)
	if _, err := c.writeStatus(ctx, cp); err != nil {
		return err
	}
	c.metrics.NotificationFinished("failed")
	if dc, err := c.dcs.DeploymentConfigs(d.Namespace).Get(d.Labels[v1alpha1.ConfigLabel]); err == nil {
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventNotificationFailed,
			"The %s notification of %s to receiver %s of %s failed: %s", d.Spec.Event, d.Spec.Revision, d.Spec.Receiver, d.Spec.Notifier, why)
	}
	return nil
}

// writeStatus writes a receipt's status with the resourceVersion it was read with; a
// conflict (another writer, a stale cache) reads it again. nil, nil when it is gone.
func (c *Controller) writeStatus(ctx context.Context, d *v1alpha1.RolloutDelivery) (*v1alpha1.RolloutDelivery, error) {
	written, err := c.stagehand.StagehandV1alpha1().RolloutDeliveries(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsConflict(err):
		return nil, plumbing.RequeueAfter(100*time.Millisecond, "the delivery changed; reading it again")
	case err != nil:
		return nil, fmt.Errorf("recording delivery %s: %w", d.Name, err)
	}
	return written, nil
}

func deadlineSeconds(n *v1alpha1.RolloutNotifier) int64 {
	if n.Spec.DeliveryDeadlineSeconds != nil {
		return *n.Spec.DeliveryDeadlineSeconds
	}
	return v1alpha1.DefaultDeliveryDeadlineSeconds
}

func truncate(s string) string {
	if len(s) > 1000 {
		return s[:1000]
	}
	return s
}

// permanentError is a receiver that no retry can fix: removed from the notifier, or a
// template that does not parse.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

// target reads the receiver's Secrets. A Secret that is missing is retried until the
// deadline: it may be created late.
func (c *Controller) target(ctx context.Context, n *v1alpha1.RolloutNotifier, receiver string) (Target, error) {
	var r *v1alpha1.NotifyReceiver
	for i := range n.Spec.Receivers {
		if n.Spec.Receivers[i].Name == receiver {
			r = &n.Spec.Receivers[i]
		}
	}
	switch {
	case r == nil:
		return Target{}, &permanentError{"receiver " + receiver + " is no longer in notifier " + n.Name}
	case r.Slack != nil:
		url, err := c.secret(ctx, n.Namespace, r.Slack.URL)
		return Target{URL: string(url), Slack: true}, err
	}
	url, err := c.secret(ctx, n.Namespace, r.Webhook.URL)
	if err != nil {
		return Target{}, err
	}
	key, err := c.secret(ctx, n.Namespace, r.Webhook.SigningKey)
	if err != nil {
		return Target{}, err
	}
	t := Target{URL: string(url), SigningKey: key}
	if r.Webhook.Template != "" {
		if t.Template, err = template.New(receiver).Option("missingkey=error").Parse(r.Webhook.Template); err != nil {
			return Target{}, &permanentError{"the template of receiver " + receiver + " does not parse: " + err.Error()}
		}
	}
	return t, nil
}

func (c *Controller) secret(ctx context.Context, ns string, ref v1alpha1.SecretKey) ([]byte, error) {
	s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, ref.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", ref.SecretName, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s has no key %s", ref.SecretName, ref.Key)
	}
	return v, nil
}
