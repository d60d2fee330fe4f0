package deferpolicy

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// syncStatefulScaleDown serves a StatefulSet's stagehand.dev/defer-scale-down-to. A
// StatefulSet removes its highest ordinals, so the pods that go are known ahead: it goes
// down one ordinal at a time, highest first, each after the steps of the pod that goes
// (docs/statefulsets.md, "Scale-down"):
//
//  1. It records the highest ordinal as the choice, in a write guarded by the
//     StatefulSet's resourceVersion.
//  2. It marks that pod; its steps run while it still serves.
//  3. Once the pod's run has ended, it lowers the replicas by one and drops the choice,
//     and the request once it is met, in one write. The StatefulSet controller removes
//     the pod, and the next sync chooses the next ordinal.
//
// A choice, once made, is carried out even if the request is withdrawn: a pod whose steps
// ran must not keep serving (DESIGN.md §4 invariant 8). When the replicas moved under the
// choice (a scale-up meanwhile), that pod is deleted instead, and comes back new.
func (c *Controller) syncStatefulScaleDown(ctx context.Context, ns, name string) error {
	if c.sets == nil {
		return nil
	}
	set, err := c.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	current := setReplicas(set)
	choiceTo, chosen, chose := v1alpha1.DeferScaleDownChoiceOf(set)
	if chose && len(chosen) == 1 {
		return c.carryOutChoice(ctx, set, choiceTo, chosen[0])
	}
	to, asked := v1alpha1.DeferScaleDownRequestOf(set)
	switch {
	case chose: // unreadable for a StatefulSet: choose again
		return c.lowerSet(ctx, set, current)
	case !v1alpha1.HasDeferScaleDownRequest(set):
		return nil
	case !asked || to >= current:
		return c.lowerSet(ctx, set, current) // nothing to lower: drop the request
	}
	policy, _, err := c.selecting(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: set.Spec.Template.Labels}}, v1alpha1.DeferBeforeScaleDown)
	if err != nil {
		return err
	}
	if policy == nil {
		return c.lowerSet(ctx, set, to)
	}
	if set.Status.ObservedGeneration < set.Generation {
		return nil // its status update brings the StatefulSet back
	}
	cp := set.DeepCopy()
	v1alpha1.SetDeferScaleDownChoice(cp, current-1, []string{fmt.Sprintf("%s-%d", set.Name, current-1)})
	return c.updateSet(ctx, cp, fmt.Sprintf("recording the pod chosen for the scale-down of StatefulSet %s", set.Name))
}

// carryOutChoice moves the choice of podName, for a scale-down to choiceTo replicas, on:
// it marks the pod, waits for its run to end, and then lowers the replicas.
func (c *Controller) carryOutChoice(ctx context.Context, set *appsv1.StatefulSet, choiceTo int32, podName string) error {
	pod, err := c.pods.Pods(set.Namespace).Get(podName)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	gone := err != nil || pod.DeletionTimestamp != nil || !metav1.IsControlledBy(pod, set)
	mark := v1alpha1.DeferScaleDownMark(set.Name, choiceTo)
	if choiceTo != setReplicas(set)-1 {
		// The replicas moved under the choice. A pod whose steps ran or run must not
		// keep serving: it is deleted, and the StatefulSet creates it again, new.
		if !gone && v1alpha1.DeferScaleDownMarkOf(pod) == mark {
			uid := pod.UID
			err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("removing pod %s, chosen for the scale-down of StatefulSet %s: %w", pod.Name, set.Name, err)
			}
			c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferScaleDownRemoved, v1alpha1.MsgDeferScaleDownRemoved, set.Name)
		}
		cp := set.DeepCopy()
		v1alpha1.ClearDeferScaleDownChoice(cp)
		return c.updateSet(ctx, cp, fmt.Sprintf("dropping the choice of StatefulSet %s, whose replicas changed", set.Name))
	}
	if gone {
		return c.lowerSet(ctx, set, choiceTo) // no pod to run steps for
	}
	if v1alpha1.DeferScaleDownMarkOf(pod) != mark {
		policy, _, err := c.selecting(pod, v1alpha1.DeferBeforeScaleDown)
		if err != nil {
			return err
		}
		if policy == nil {
			return c.lowerSet(ctx, set, choiceTo)
		}
		return c.choose(ctx, pod, "StatefulSet "+set.Name, mark, policy) // its update brings the StatefulSet back
	}
	if run, err := v1alpha1.DeferRunOf(pod); err == nil && run != nil && !run.Done() {
		return nil // its steps still run; the run's end brings the StatefulSet back
	}
	return c.lowerSet(ctx, set, choiceTo)
}

// lowerSet sets set's replicas and drops its choice, and its request once replicas meets
// it, in one write.
func (c *Controller) lowerSet(ctx context.Context, set *appsv1.StatefulSet, replicas int32) error {
	cp := set.DeepCopy()
	v1alpha1.ClearDeferScaleDownChoice(cp)
	if to, ok := v1alpha1.DeferScaleDownRequestOf(cp); !ok || to >= replicas {
		v1alpha1.ClearDeferScaleDownRequest(cp)
	}
	cp.Spec.Replicas = &replicas
	return c.updateSet(ctx, cp, fmt.Sprintf("scaling StatefulSet %s to %d", set.Name, replicas))
}

// updateSet writes set; a conflict reads it again.
func (c *Controller) updateSet(ctx context.Context, set *appsv1.StatefulSet, doing string) error {
	_, err := c.kube.AppsV1().StatefulSets(set.Namespace).Update(ctx, set, metav1.UpdateOptions{})
	return workloadWritten(err, "StatefulSet", doing)
}

// setChanged enqueues a StatefulSet that asks for a deferred scale-down, or is in one.
func (c *Controller) setChanged(obj any) {
	if set, ok := obj.(*appsv1.StatefulSet); ok && v1alpha1.InDeferScaleDown(set) {
		c.add(kindSet, set.Namespace, set.Name)
	}
}

func setReplicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas == nil {
		return 1
	}
	return *set.Spec.Replicas
}
