package deferpolicy

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
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

// syncScaleDown serves a ReplicaSet's stagehand.dev/defer-scale-down-to: it chooses the
// pods that the scale-down will remove, marks them, lets their BeforeScaleDown steps run,
// and lowers the replicas once every chosen pod's run has an outcome. Without a policy
// that selects the ReplicaSet's pods it lowers the replicas at once.
func (c *Controller) syncScaleDown(ctx context.Context, ns, name string) error {
	rs, err := c.rsets.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	raw, ok := rs.Annotations[v1alpha1.DeferScaleDownToAnnotation]
	if !ok {
		return nil
	}
	target, err := strconv.ParseInt(raw, 10, 32)
	current := int32(1)
	if rs.Spec.Replicas != nil {
		current = *rs.Spec.Replicas
	}
	if err != nil || target < 0 || int32(target) >= current {
		return c.scaleTo(ctx, rs, current) // nothing to lower: drop the request
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: rs.Spec.Template.Labels}}
	policy, _, err := c.selecting(probe, v1alpha1.DeferBeforeScaleDown)
	if err != nil {
		return err
	}
	if policy == nil {
		return c.scaleTo(ctx, rs, int32(target))
	}
	if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != current {
		// The ReplicaSet controller has not yet removed the pods of the last scale-down:
		// they would be counted twice. Its status update brings the ReplicaSet back.
		return nil
	}
	pods, err := c.podsOf(rs)
	if err != nil {
		return err
	}
	// The mark names the request, so that a pod chosen for an earlier request that the
	// ReplicaSet controller did not remove runs its steps again for this one.
	mark := rs.Name + "/" + strconv.FormatInt(target, 10)
	var chosen, rest []*corev1.Pod
	for _, p := range pods {
		if p.Annotations[v1alpha1.DeferScaleDownAnnotation] == mark {
			chosen = append(chosen, p)
		} else {
			rest = append(rest, p)
		}
	}
	need := int(current - int32(target))
	if len(chosen) < need {
		rankForRemoval(rest)
		for _, p := range rest[:min(need-len(chosen), len(rest))] {
			if err := c.choose(ctx, p, rs, mark, policy); err != nil {
				return err
			}
		}
		return nil // the chosen pods' updates bring the ReplicaSet back
	}
	for _, p := range chosen {
		run, err := v1alpha1.DeferRunOf(p)
		if err == nil && run != nil && !run.Done() {
			return nil // a chosen pod's steps still run
		}
	}
	return c.scaleTo(ctx, rs, int32(target))
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

// rankForRemoval sorts pods the way the ReplicaSet controller picks the pods to remove:
// unscheduled before scheduled, Pending before Running, not ready before ready, lower
// deletion cost first, then the newest.
func rankForRemoval(pods []*corev1.Pod) {
	key := func(p *corev1.Pod) (int, int, int, int64) {
		assigned := 0
		if p.Spec.NodeName != "" {
			assigned = 1
		}
		phase := 2
		switch p.Status.Phase {
		case corev1.PodPending:
			phase = 0
		case corev1.PodUnknown:
			phase = 1
		}
		ready := 0
		if podReady(p) {
			ready = 1
		}
		cost, _ := strconv.ParseInt(p.Annotations[v1alpha1.PodDeletionCostAnnotation], 10, 32)
		return assigned, phase, ready, cost
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ai, bi, ci, di := key(pods[i])
		aj, bj, cj, dj := key(pods[j])
		switch {
		case ai != aj:
			return ai < aj
		case bi != bj:
			return bi < bj
		case ci != cj:
			return ci < cj
		case di != dj:
			return di < dj
		}
		return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp)
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// choose marks pod for rs's scale-down: the lowest deletion cost, the scale-down mark and
// a new BeforeScaleDown run, in one write.
func (c *Controller) choose(ctx context.Context, pod *corev1.Pod, rs *appsv1.ReplicaSet, mark string, policy *v1alpha1.DeferPolicy) error {
	cp := pod.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	run := &v1alpha1.DeferRun{
		Policy: policy.Name, PolicyUID: string(policy.UID), When: v1alpha1.DeferBeforeScaleDown,
		Steps: len(policy.Spec.Steps),
	}
	cp.Annotations[v1alpha1.PodDeletionCostAnnotation] = strconv.Itoa(chosenCost)
	cp.Annotations[v1alpha1.DeferScaleDownAnnotation] = mark
	cp.Annotations[v1alpha1.DeferRunAnnotation] = run.Encode()
	cp.Annotations[v1alpha1.DeferProgressAnnotation] = run.Progress()
	_, err := c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(100*time.Millisecond, "a pod changed; choosing again")
	case err != nil:
		return fmt.Errorf("marking pod %s for the scale-down of %s: %w", pod.Name, rs.Name, err)
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStarted,
		"Chosen for the scale-down of ReplicaSet %s: DeferPolicy %s runs %d steps first, within %ds",
		rs.Name, policy.Name, run.Steps, policy.GracePeriod())
	return nil
}

// scaleTo sets rs's replicas and drops the scale-down request, in one write.
func (c *Controller) scaleTo(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32) error {
	cp := rs.DeepCopy()
	delete(cp.Annotations, v1alpha1.DeferScaleDownToAnnotation)
	cp.Spec.Replicas = &replicas
	_, err := c.kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(100*time.Millisecond, "the ReplicaSet changed; reading it again")
	case err != nil:
		return fmt.Errorf("scaling ReplicaSet %s to %d: %w", rs.Name, replicas, err)
	}
	return nil
}

// syncBeforeScaleDown runs the steps of a running pod chosen for a scale-down.
func (c *Controller) syncBeforeScaleDown(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun) error {
	policy, err := c.runnable(ctx, pod, run)
	if policy == nil {
		return err
	}
	return c.advance(ctx, pod, run, policy)
}
