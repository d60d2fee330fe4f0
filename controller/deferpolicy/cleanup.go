package deferpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// DefaultStepTTL keeps a finished step's pod, and its log, this long.
const DefaultStepTTL = 10 * time.Minute

// syncStep deletes a step's pod once it has finished and its TTL has passed, and at once
// when it still runs for a pod whose run no longer needs it (the pod is gone, released
// by hand, or its run ended).
func (c *Controller) syncStep(ctx context.Context, ns, name string) error {
	sp, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if sp.DeletionTimestamp != nil {
		return nil
	}
	if podstatus.Finished(sp) {
		left := c.stepTTL - c.now().Sub(podstatus.FinishedAt(sp, ""))
		if left > 0 {
			c.addAfter(kindStep, ns, name, left+time.Second)
			return nil
		}
		return c.deleteStep(ctx, sp, 0)
	}
	if c.stepStillWanted(sp) {
		return nil
	}
	return c.deleteStep(ctx, sp, 1)
}

// stepStillWanted reports whether a running step's pod belongs to a run in progress.
func (c *Controller) stepStillWanted(sp *corev1.Pod) bool {
	pod, err := c.pods.Pods(sp.Namespace).Get(v1alpha1.DeferStepFor(sp))
	if err != nil {
		return !apierrors.IsNotFound(err) // an unreadable cache: keep it
	}
	if pod.UID != types.UID(sp.Labels[v1alpha1.DeferStepOfLabel]) {
		return false
	}
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil || run == nil || run.Done() {
		return false
	}
	if pod.DeletionTimestamp != nil && !v1alpha1.HasDeferFinalizer(pod) {
		return false // released by hand
	}
	return true
}

func (c *Controller) deleteStep(ctx context.Context, sp *corev1.Pod, grace int64) error {
	err := c.kube.CoreV1().Pods(sp.Namespace).Delete(ctx, sp.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(grace),
		Preconditions:      &metav1.Preconditions{UID: &sp.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting step pod %s: %w", sp.Name, err)
	}
	return nil
}
