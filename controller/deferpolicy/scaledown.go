package deferpolicy

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// chosenCost is the pod-deletion-cost of a pod chosen for a scale-down: the lowest there
// is, so that the ReplicaSet controller removes exactly the chosen pods.
const chosenCost = math.MinInt32

// syncScaleDown serves a ReplicaSet's stagehand.dev/defer-scale-down-to so that the pods
// whose BeforeScaleDown steps run are exactly the pods that go (DESIGN.md §4 invariant 8):
//
//  1. It records the chosen pods on the ReplicaSet (the choice) before it marks any of
//     them. That write is guarded by the ReplicaSet's resourceVersion, so a sync that reads
//     a stale cache cannot choose a second set: it conflicts and reads again.
//  2. It marks the chosen pods with the lowest deletion cost and a run; their steps run.
//  3. Once every chosen pod's run has ended, and the ReplicaSet controller would remove
//     exactly the chosen pods (a pod that turned not ready meanwhile would go first: it is
//     chosen too, and runs its steps), it lowers the replicas and moves the choice to the
//     removing list, in one write.
//  4. removeChosen deletes any chosen pod the ReplicaSet controller kept.
//
// A choice, once made, is carried out even if the request is withdrawn: a pod whose
// steps ran must not keep serving. Without a policy that selects the ReplicaSet's pods,
// and without a choice, it lowers the replicas at once.
func (c *Controller) syncScaleDown(ctx context.Context, ns, name string) error {
	rs, err := c.rsets.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if removing := v1alpha1.DeferScaleDownRemovingOf(rs); len(removing) > 0 {
		return c.removeChosen(ctx, rs, removing)
	}
	current := rsReplicas(rs)
	to, asked := v1alpha1.DeferScaleDownRequestOf(rs)
	lowers := asked && to < current
	choiceTo, chosen, chose := v1alpha1.DeferScaleDownChoiceOf(rs)
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: rs.Spec.Template.Labels}}
	policy, _, err := c.selecting(probe, v1alpha1.DeferBeforeScaleDown)
	if err != nil {
		return err
	}
	switch {
	case !chose && !v1alpha1.HasDeferScaleDownRequest(rs):
		return nil
	case !chose && !lowers:
		return c.scaleTo(ctx, rs, current, nil) // nothing to lower: drop the request
	case !chose && policy == nil:
		return c.scaleTo(ctx, rs, to, nil)
	}
	if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != current {
		// The ReplicaSet controller has not yet caught up with the last change: its pods
		// would be counted twice. Its status update brings the ReplicaSet back.
		return nil
	}
	pods, err := c.podsOf(rs)
	if err != nil {
		return err
	}
	if !chose {
		choiceTo = to
	}
	live, rest := splitChosen(pods, chosen)
	if lowers && len(live) < int(current-to) {
		rankForRemoval(rest)
		more := rest[:min(int(current-to)-len(live), len(rest))]
		return c.writeChoice(ctx, rs, choiceTo, append(live, more...))
	}
	if len(live) != len(chosen) && len(live) > 0 {
		return c.writeChoice(ctx, rs, choiceTo, live) // forget chosen pods that went
	}
	waiting, err := c.markChosen(ctx, rs, v1alpha1.DeferScaleDownMark(rs.Name, choiceTo), live, policy)
	if err != nil || waiting {
		return err
	}
	target := current
	if lowers {
		target = to
		if ahead := rankedAhead(live, rest); len(ahead) > 0 && policy != nil {
			// These would go before the chosen pods: they go too, after their steps.
			return c.writeChoice(ctx, rs, choiceTo, append(live, ahead...))
		}
	}
	return c.scaleTo(ctx, rs, target, live)
}

// markChosen marks the chosen pods that are not marked yet (waiting: their updates bring
// the ReplicaSet back), and reports whether a chosen pod's run has not ended. Without a
// policy a pod that is not marked runs no steps.
func (c *Controller) markChosen(ctx context.Context, rs *appsv1.ReplicaSet, mark string, chosen []*corev1.Pod, policy *v1alpha1.DeferPolicy) (bool, error) {
	waiting := false
	for _, p := range chosen {
		if v1alpha1.DeferScaleDownMarkOf(p) != mark {
			if policy == nil {
				continue
			}
			if err := c.choose(ctx, p, "ReplicaSet "+rs.Name, mark, policy); err != nil {
				return true, err
			}
			waiting = true
			continue
		}
		if run, err := v1alpha1.DeferRunOf(p); err == nil && run != nil && !run.Done() {
			waiting = true // a chosen pod's steps still run
		}
	}
	return waiting, nil
}

// writeChoice records the chosen pods on rs. The write carries rs's resourceVersion: a
// choice made from a stale cache conflicts instead of adding a second set of pods.
func (c *Controller) writeChoice(ctx context.Context, rs *appsv1.ReplicaSet, to int32, chosen []*corev1.Pod) error {
	names := make([]string, 0, len(chosen))
	for _, p := range chosen {
		names = append(names, p.Name)
	}
	cp := rs.DeepCopy()
	v1alpha1.SetDeferScaleDownChoice(cp, to, names)
	return c.updateRS(ctx, cp, fmt.Sprintf("recording the pods chosen for the scale-down of ReplicaSet %s", rs.Name))
}

// removeChosen deletes the chosen pods that the ReplicaSet controller kept, once it has
// caught up with the lowered replicas, and drops the removing list when each of them is
// gone or being deleted.
func (c *Controller) removeChosen(ctx context.Context, rs *appsv1.ReplicaSet, names []string) error {
	if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != rsReplicas(rs) {
		return nil // its status update brings the ReplicaSet back
	}
	kept := 0
	for _, name := range names {
		p, err := c.pods.Pods(rs.Namespace).Get(name)
		if apierrors.IsNotFound(err) || (err == nil && (p.DeletionTimestamp != nil || !metav1.IsControlledBy(p, rs))) {
			continue
		}
		if err != nil {
			return err
		}
		kept++
		uid := p.UID
		err = c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("removing pod %s, chosen for the scale-down of %s: %w", p.Name, rs.Name, err)
		}
		c.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.EventDeferScaleDownRemoved, v1alpha1.MsgDeferScaleDownRemoved, rs.Name)
	}
	if kept > 0 {
		return plumbing.RequeueAfter(time.Second, "waiting for the chosen pods' deletions to reach the cache")
	}
	cp := rs.DeepCopy()
	v1alpha1.ClearDeferScaleDownRemoving(cp)
	return c.updateRS(ctx, cp, fmt.Sprintf("ending the scale-down of ReplicaSet %s", rs.Name))
}

// splitChosen splits pods into the chosen ones still there, in the choice's order, and
// the rest.
func splitChosen(pods []*corev1.Pod, chosen []string) (live, rest []*corev1.Pod) {
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for _, n := range chosen {
		if p, ok := byName[n]; ok {
			live = append(live, p)
			delete(byName, n)
		}
	}
	for _, p := range pods {
		if _, ok := byName[p.Name]; ok {
			rest = append(rest, p)
		}
	}
	return live, rest
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// podsOf are rs's pods that are not being deleted.
func (c *Controller) podsOf(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil, plumbing.Fatal(fmt.Errorf("ReplicaSet %s: selector: %w", rs.Name, err))
	}
	all, err := c.pods.Pods(rs.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range all {
		if p.DeletionTimestamp == nil && metav1.IsControlledBy(p, rs) {
			out = append(out, p)
		}
	}
	return out, nil
}

// scaleTo sets rs's replicas and drops the scale-down request and choice, in one write;
// the chosen pods, when there are any, go to the removing list.
func (c *Controller) scaleTo(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, chosen []*corev1.Pod) error {
	cp := rs.DeepCopy()
	var names []string
	for _, p := range chosen {
		names = append(names, p.Name)
	}
	v1alpha1.EndDeferScaleDownRequest(cp, names)
	cp.Spec.Replicas = &replicas
	return c.updateRS(ctx, cp, fmt.Sprintf("scaling ReplicaSet %s to %d", rs.Name, replicas))
}

// updateRS writes rs; a conflict reads it again.
func (c *Controller) updateRS(ctx context.Context, rs *appsv1.ReplicaSet, doing string) error {
	_, err := c.kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
	return workloadWritten(err, "ReplicaSet", doing)
}

// workloadWritten is what the write of a workload (kind) returned, for a sync: nothing to
// do when it is gone, a requeue to read it again on a conflict.
func workloadWritten(err error, kind, doing string) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(100*time.Millisecond, "the "+kind+" changed; reading it again")
	case err != nil:
		return fmt.Errorf("%s: %w", doing, err)
	}
	return nil
}

// syncBeforeStop runs the steps of a running pod chosen for a scale-down, or asked to
// leave by an EvictionRequest that still stands.
func (c *Controller) syncBeforeStop(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun) error {
	if why := c.evictionWithdrawn(pod, run); why != "" {
		c.stopSteps(ctx, pod)
		return c.finish(ctx, pod, run, v1alpha1.DeferSkipped, why)
	}
	policy, err := c.runnable(ctx, pod, run)
	if policy == nil {
		return err
	}
	return c.advance(ctx, pod, run, policy)
}
