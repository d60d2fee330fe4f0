package deferpolicy

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// rankKey is where the ReplicaSet controller ranks a pod for removal, up to the
// deletion cost: lower goes first.
type rankKey struct {
	assigned, phase, ready int
	cost                   int64
}

func (a rankKey) less(b rankKey) bool {
	switch {
	case a.assigned != b.assigned:
		return a.assigned < b.assigned
	case a.phase != b.phase:
		return a.phase < b.phase
	case a.ready != b.ready:
		return a.ready < b.ready
	}
	return a.cost < b.cost
}

// removalKey is p's rankKey: unscheduled before scheduled, Pending before Unknown before
// Running, not ready before ready, then the lower deletion cost.
func removalKey(p *corev1.Pod) rankKey {
	k := rankKey{phase: 2}
	if p.Spec.NodeName != "" {
		k.assigned = 1
	}
	switch p.Status.Phase {
	case corev1.PodPending:
		k.phase = 0
	case corev1.PodUnknown:
		k.phase = 1
	}
	if podReady(p) {
		k.ready = 1
	}
	k.cost, _ = strconv.ParseInt(p.Annotations[v1alpha1.PodDeletionCostAnnotation], 10, 32)
	return k
}

// rankForRemoval sorts pods the way the ReplicaSet controller picks the pods to remove:
// by removalKey, then the newest.
func rankForRemoval(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		ki, kj := removalKey(pods[i]), removalKey(pods[j])
		if ki != kj {
			return ki.less(kj)
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

// choose marks pod for the scale-down of workload ("ReplicaSet NAME" or "StatefulSet
// NAME"): the lowest deletion cost, the scale-down mark and a new BeforeScaleDown run, in
// one write. A StatefulSet ignores the cost: it removes its highest ordinals.
func (c *Controller) choose(ctx context.Context, pod *corev1.Pod, workload, mark string, policy *v1alpha1.DeferPolicy) error {
	cp := pod.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	run := &v1alpha1.DeferRun{
		Policy: policy.Name, PolicyUID: string(policy.UID), When: v1alpha1.DeferBeforeScaleDown,
		Steps: len(policy.Spec.Steps),
	}
	cp.Annotations[v1alpha1.PodDeletionCostAnnotation] = strconv.Itoa(chosenCost)
	v1alpha1.SetDeferScaleDownMark(cp, mark)
	if before, err := v1alpha1.DeferRunOf(pod); err == nil && before != nil && before.When == v1alpha1.DeferBeforeEviction &&
		(!before.Done() || before.Outcome == v1alpha1.DeferCompleted) {
		// An eviction's steps run, or ran, already: the steps before a pod stops run once,
		// and the scale-down waits for that run instead.
		run = before
	}
	v1alpha1.SetDeferRun(cp, run)
	_, err := c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(100*time.Millisecond, "a pod changed; choosing again")
	case err != nil:
		return fmt.Errorf("marking pod %s for the scale-down of %s: %w", pod.Name, workload, err)
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStarted,
		"Chosen for the scale-down of %s: DeferPolicy %s runs %d steps first, within %ds",
		workload, policy.Name, run.Steps, policy.GracePeriod())
	return nil
}

// rankedAhead are the pods of rest that the ReplicaSet controller could remove before
// one of chosen: it ranks by node assignment, phase and readiness before the deletion
// cost, so a pod that turned not ready after the choice goes first.
func rankedAhead(chosen, rest []*corev1.Pod) []*corev1.Pod {
	if len(chosen) == 0 {
		return nil
	}
	worst := removalKey(chosen[0])
	for _, p := range chosen[1:] {
		if k := removalKey(p); worst.less(k) {
			worst = k
		}
	}
	var ahead []*corev1.Pod
	for _, p := range rest {
		if !worst.less(removalKey(p)) {
			ahead = append(ahead, p)
		}
	}
	return ahead
}
