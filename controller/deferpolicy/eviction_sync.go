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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// driverDelay is how long a request waits for an evictionrequest-controller to create
// its Eviction before Stagehand creates and drives one itself (Kubernetes 1.37 ships no
// such controller; a later release that does finds Stagehand only responding).
const driverDelay = 5 * time.Second

// syncEviction plays Stagehand's parts in the eviction of one pod that names it as a
// responder: the driver of an Eviction it created, the responder that runs the
// BeforeEviction steps, the default evictor, and the mirror of all that on the
// EvictionRequests. The key names the pod.
func (c *Controller) syncEviction(ctx context.Context, ns, name string) error {
	if c.evictions == nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	allReqs, err := c.requests.EvictionRequests(ns).List(everything)
	if err != nil {
		return err
	}
	all, err := c.evictions.Evictions(ns).List(everything)
	if err != nil {
		return err
	}
	if pod == nil || podstatus.Finished(pod) {
		return c.targetGone(ctx, pod, all, allReqs, ns, name)
	}
	if !v1alpha1.HasEvictionResponder(pod) {
		return nil // not a pod Stagehand answers for
	}
	reqs := requestsFor(allReqs, pod.Name, pod.UID)
	ev := evictionOf(all, pod.UID)
	if ev == nil {
		return c.createEviction(ctx, pod, reqs)
	}
	driven := ev.Labels[v1alpha1.EvictionDriverLabel] == "true"
	if driven {
		if done, err := c.driveEviction(ctx, pod, ev, reqs); done || err != nil {
			return err
		}
	}
	if stateOf(&ev.Status, v1alpha1.EvictionResponderName) == lifecyclev1alpha1.ResponderStateActive && !final(&ev.Status) {
		if err := c.respond(ctx, pod, ev, driven); err != nil {
			return err
		}
	}
	if driven && !final(&ev.Status) {
		if i := active(&ev.Status); i >= 0 && ev.Status.TargetResponders[i].Name == evictorName {
			if err := c.evict(ctx, pod, ev); err != nil {
				return err
			}
		}
	}
	return c.mirror(ctx, reqs, ev)
}

// evictionOf is the Eviction of the pod with uid among all, or nil. The one Stagehand
// drives wins over another, which only a misbehaving client would have made.
func evictionOf(all []*lifecyclev1alpha1.Eviction, uid types.UID) *lifecyclev1alpha1.Eviction {
	var found *lifecyclev1alpha1.Eviction
	for _, e := range all {
		if t := e.Spec.Target.Pod; t == nil || t.UID != uid || e.DeletionTimestamp != nil {
			continue
		}
		if found == nil || e.Labels[v1alpha1.EvictionDriverLabel] == "true" {
			found = e
		}
	}
	return found
}

// evictionName is the name of the Eviction Stagehand creates for pod: fixed, so that a
// second create from a stale cache conflicts instead of making two.
func evictionName(pod *corev1.Pod) string {
	base, uid := pod.Name, string(pod.UID)
	if len(base) > 230 {
		base = base[:230]
	}
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return base + "-" + uid
}

// createEviction creates and starts the Eviction of pod once a request has waited
// driverDelay for an evictionrequest-controller to do it.
func (c *Controller) createEviction(ctx context.Context, pod *corev1.Pod, reqs []*lifecyclev1alpha1.EvictionRequest) error {
	if !wantsEviction(reqs) {
		return nil
	}
	oldest := c.now()
	for _, r := range reqs {
		if r.CreationTimestamp.Time.Before(oldest) {
			oldest = r.CreationTimestamp.Time
		}
	}
	if wait := driverDelay - c.now().Sub(oldest); wait > 0 {
		return plumbing.RequeueAfter(wait, "waiting for an evictionrequest-controller to create the Eviction")
	}
	ev := &lifecyclev1alpha1.Eviction{
		ObjectMeta: metav1.ObjectMeta{
			Name: evictionName(pod), Namespace: pod.Namespace,
			Labels: map[string]string{v1alpha1.EvictionDriverLabel: "true"},
			// The pod's garbage goes with it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: lifecyclev1alpha1.EvictionSpec{Target: lifecyclev1alpha1.EvictionTarget{
			Pod: &lifecyclev1alpha1.EvictionPodReference{Name: pod.Name, UID: pod.UID}}},
	}
	created, err := c.kube.LifecycleV1alpha1().Evictions(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return plumbing.RequeueAfter(time.Second, "the Eviction exists; waiting for the cache")
	}
	if err != nil {
		return fmt.Errorf("creating the Eviction of pod %s: %w", pod.Name, err)
	}
	// The apiserver clears the status of a new Eviction: it is set in a second write.
	created.Status = initialStatus(pod, reqs, c.now())
	return c.writeEviction(ctx, created)
}

// driveEviction moves an Eviction Stagehand created on: a new request after its end
// starts it again, the states follow the responders, and a request-less Eviction goes.
// done says that it wrote, and the informer brings the pod back.
func (c *Controller) driveEviction(ctx context.Context, pod *corev1.Pod, ev *lifecyclev1alpha1.Eviction, reqs []*lifecyclev1alpha1.EvictionRequest) (bool, error) {
	if final(&ev.Status) {
		if len(reqs) == 0 || restartedAfter(ev, reqs) {
			err := c.kube.LifecycleV1alpha1().Evictions(ev.Namespace).Delete(ctx, ev.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &ev.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return true, fmt.Errorf("deleting the ended Eviction %s: %w", ev.Name, err)
			}
			return true, nil
		}
		return false, nil
	}
	if len(ev.Status.TargetResponders) == 0 {
		// Created, but the status write did not follow (a restart in between).
		cp := ev.DeepCopy()
		cp.Status = initialStatus(pod, reqs, c.now())
		return true, c.writeEviction(ctx, cp)
	}
	st := ev.Status.DeepCopy()
	if !drive(st, reqs, ev.Generation, c.now()) {
		c.addAfter(kindEvict, pod.Namespace, pod.Name, time.Minute) // a silent responder's deadline
		return false, nil
	}
	cp := ev.DeepCopy()
	cp.Status = *st
	return true, c.writeEviction(ctx, cp)
}

// restartedAfter reports whether a request asks for the eviction again after ev ended:
// created, or changed back to Eviction, since its final condition.
func restartedAfter(ev *lifecyclev1alpha1.Eviction, reqs []*lifecyclev1alpha1.EvictionRequest) bool {
	cond := meta.FindStatusCondition(ev.Status.Conditions, string(lifecyclev1alpha1.EvictionConditionFailed))
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return false // evicted: the pod goes
	}
	for _, r := range reqs {
		if r.Spec.Intent != lifecyclev1alpha1.EvictionRequestIntentEviction {
			continue
		}
		if r.CreationTimestamp.After(cond.LastTransitionTime.Time) || r.Generation > ptr.Deref(r.Status.ObservedGeneration, r.Generation) {
			return true
		}
	}
	return false
}

// targetGone ends the Evictions Stagehand drives for a pod that is gone or has stopped:
// TargetEvicted, on them and on their requests.
func (c *Controller) targetGone(ctx context.Context, pod *corev1.Pod, all []*lifecyclev1alpha1.Eviction,
	allReqs []*lifecyclev1alpha1.EvictionRequest, ns, name string) error {
	reason, message := string(lifecyclev1alpha1.EvictionConditionReasonPodDeleted), "the pod was deleted"
	if pod != nil {
		reason, message = string(lifecyclev1alpha1.EvictionConditionReasonPodTerminal), "the pod has stopped ("+string(pod.Status.Phase)+")"
	}
	for _, ev := range all {
		t := ev.Spec.Target.Pod
		if t == nil || t.Name != name || (pod != nil && t.UID != pod.UID) || ev.Labels[v1alpha1.EvictionDriverLabel] != "true" {
			continue
		}
		if !final(&ev.Status) && len(ev.Status.TargetResponders) > 0 {
			cp := ev.DeepCopy()
			state := lifecyclev1alpha1.ResponderStateInterrupted
			if i := active(&cp.Status); i >= 0 && reported(&cp.Status, i) {
				state = lifecyclev1alpha1.ResponderStateCompleted
			}
			end(&cp.Status, lifecyclev1alpha1.EvictionConditionTargetEvicted, reason, message, state, cp.Generation)
			if err := c.writeEviction(ctx, cp); err != nil {
				return err
			}
			ev = cp
		}
		if err := c.mirror(ctx, requestsFor(allReqs, t.Name, t.UID), ev); err != nil {
			return err
		}
	}
	return c.evictedAnyway(ctx, allReqs, pod, name, reason, message)
}

// writeEviction writes ev's status. A conflict is retried from a fresh cache.
func (c *Controller) writeEviction(ctx context.Context, ev *lifecyclev1alpha1.Eviction) error {
	_, err := c.kube.LifecycleV1alpha1().Evictions(ev.Namespace).UpdateStatus(ctx, ev, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(200*time.Millisecond, "the Eviction changed; reading it again")
	case err != nil:
		return fmt.Errorf("writing the status of Eviction %s: %w", ev.Name, err)
	}
	return nil
}
