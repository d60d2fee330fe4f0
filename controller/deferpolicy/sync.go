package deferpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

var everything = labels.Everything()

// sync dispatches a key to the pod, policy, ReplicaSet, StatefulSet or step handler.
func (c *Controller) sync(ctx context.Context, key string) error {
	return plumbing.DispatchKindKey(ctx, key, map[string]plumbing.KindSync{
		kindPod: c.syncPod, kindPolicy: c.syncPolicyStatus, kindRS: c.syncScaleDown,
		kindSet: c.syncStatefulScaleDown, kindStep: c.syncStep, kindEvict: c.syncEviction})
}

// syncPod moves one pod's defer run on.
func (c *Controller) syncPod(ctx context.Context, ns, name string) error {
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, isStep := pod.Labels[v1alpha1.DeferStepOfLabel]; isStep {
		return nil
	}
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferSkipped, "Unreadable defer record, started again: %v", err)
		run = nil
	}
	beforeStop := run != nil && run.When.BeforeStop() && !run.Done()
	if pod.DeletionTimestamp == nil {
		if beforeStop {
			return c.syncBeforeStop(ctx, pod, run)
		}
		return c.ensureFinalizer(ctx, pod)
	}
	if beforeStop {
		// A pod chosen for a scale-down, or asked to leave, was deleted before its steps
		// ended.
		c.stopSteps(ctx, pod)
		if !v1alpha1.HasDeferFinalizer(pod) {
			return c.finish(ctx, pod, run, v1alpha1.DeferSkipped, "the pod was deleted before its steps ended")
		}
	}
	if !v1alpha1.HasDeferFinalizer(pod) {
		return nil
	}
	if run != nil && run.When != v1alpha1.DeferAfterTermination {
		run = nil // a record of a run before the pod stopped; the pod's deletion starts its own run
	}
	return c.syncAfterTermination(ctx, pod, run)
}

// selecting is the first policy by name of kind when that selects pod, and the others'
// names; nil when none does.
func (c *Controller) selecting(pod *corev1.Pod, when v1alpha1.DeferWhen) (*v1alpha1.DeferPolicy, []string, error) {
	all, err := c.policies.DeferPolicies(pod.Namespace).List(everything)
	if err != nil {
		return nil, nil, err
	}
	first, others := v1alpha1.FirstSelecting(all, when, pod.Labels)
	return first, others, nil
}

// ensureFinalizer adds the finalizer to a running pod that an AfterTermination policy
// selects and that lacks it. The shipped MutatingAdmissionPolicy adds it at creation;
// this covers pods created before the policy and clusters without that admission. A pod
// released on purpose (kubectl stagehand defer release) is left without it.
func (c *Controller) ensureFinalizer(ctx context.Context, pod *corev1.Pod) error {
	if v1alpha1.HasDeferFinalizer(pod) || podstatus.Finished(pod) {
		return nil
	}
	if v1alpha1.DeferReleased(pod) {
		return nil
	}
	policy, _, err := c.selecting(pod, v1alpha1.DeferAfterTermination)
	if err != nil || policy == nil {
		return err
	}
	cp := pod.DeepCopy()
	cp.Finalizers = append(cp.Finalizers, v1alpha1.DeferFinalizer)
	_, err = c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("adding the finalizer %s: %w", v1alpha1.DeferFinalizer, err)
	}
	c.log.WithField("pod", pod.Namespace+"/"+pod.Name).Info("added the defer finalizer the admission policy did not add")
	return nil
}

// syncAfterTermination runs the steps of a deleted pod that carries the finalizer, and
// releases it on every way out.
func (c *Controller) syncAfterTermination(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun) error {
	if run == nil {
		return c.beginAfterTermination(ctx, pod)
	}
	if run.Done() {
		return c.release(ctx, pod, run) // the last release did not get through
	}
	policy, err := c.runnable(ctx, pod, run)
	if policy == nil {
		return err
	}
	if !stopped(pod) {
		return nil // the pod's update when its containers stop brings it back
	}
	return c.advance(ctx, pod, run, policy)
}

// runnable is the policy of a run in progress, when it still selects the pod and the
// pod's node can still run steps. Otherwise it stops the steps, ends the run Skipped, and
// returns nil with the error of that write.
func (c *Controller) runnable(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun) (*v1alpha1.DeferPolicy, error) {
	policy, reason := c.stillSelects(pod, run)
	if policy != nil {
		reason = c.nodeLost(pod, policy)
	}
	if reason == "" {
		return policy, nil
	}
	c.stopSteps(ctx, pod)
	return nil, c.finish(ctx, pod, run, v1alpha1.DeferSkipped, reason)
}

// beginAfterTermination decides whether a deleted pod's steps run at all, and records the
// run when they do.
func (c *Controller) beginAfterTermination(ctx context.Context, pod *corev1.Pod) error {
	policy, others, err := c.selecting(pod, v1alpha1.DeferAfterTermination)
	if err != nil {
		return err
	}
	if policy == nil {
		return c.finish(ctx, pod, &v1alpha1.DeferRun{When: v1alpha1.DeferAfterTermination}, v1alpha1.DeferSkipped,
			"no AfterTermination DeferPolicy selects the pod")
	}
	run := &v1alpha1.DeferRun{
		Policy: policy.Name, PolicyUID: string(policy.UID), When: v1alpha1.DeferAfterTermination,
		Steps: len(policy.Spec.Steps),
	}
	if forced, why := c.forced(pod); forced {
		return c.finish(ctx, pod, run, v1alpha1.DeferSkipped, why)
	}
	if lost := c.nodeLost(pod, policy); lost != "" {
		return c.finish(ctx, pod, run, v1alpha1.DeferSkipped, lost)
	}
	if err := c.write(ctx, pod, run, false); err != nil {
		return err
	}
	if len(others) > 0 {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferConflict,
			"DeferPolicies %s also select this pod; only %s runs (the first by name)", strings.Join(others, ", "), policy.Name)
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStarted,
		"DeferPolicy %s: %d steps will run once the pod's containers have stopped, within %ds", policy.Name, run.Steps, policy.GracePeriod())
	return nil
}

// forced reports whether a user forced pod's deletion while its containers still ran,
// which skips the steps (DESIGN.md §4 invariant 8). Grace period 0 alone does not tell:
//   - the apiserver deletes a Succeeded or Failed pod at 0: nothing runs, the steps run;
//   - a kubelet deletes every pod again at 0 once its containers have stopped;
//   - a pod whose own terminationGracePeriodSeconds is 0 is deleted at 0 by a plain
//     delete; it asked for that, and its steps run (a forced deletion of such a pod
//     cannot be told from a plain one, and losing a clean-up is worse).
//
// So the deletion is forced when it is at 0, the pod's own grace period is not 0, and
// the containers ran when this process saw the deletion start at 0, or, when it did not
// see the start, still run now.
func (c *Controller) forced(pod *corev1.Pod) (bool, string) {
	if g := pod.DeletionGracePeriodSeconds; g == nil || *g != 0 {
		return false, ""
	}
	if tgps := pod.Spec.TerminationGracePeriodSeconds; tgps != nil && *tgps == 0 {
		return false, ""
	}
	first := c.firstSeen(pod)
	if (first.grace == 0 && first.running) || !stopped(pod) {
		return true, "the pod was deleted with grace period 0 while its containers ran (a forced deletion): the steps are skipped"
	}
	return false, ""
}

// stillSelects is the run's policy if it still exists and still selects pod; otherwise
// nil and the reason.
func (c *Controller) stillSelects(pod *corev1.Pod, run *v1alpha1.DeferRun) (*v1alpha1.DeferPolicy, string) {
	policy, err := c.policies.DeferPolicies(pod.Namespace).Get(run.Policy)
	switch {
	case apierrors.IsNotFound(err), err == nil && string(policy.UID) != run.PolicyUID:
		return nil, fmt.Sprintf("DeferPolicy %s was deleted", run.Policy)
	case err != nil:
		return nil, fmt.Sprintf("reading DeferPolicy %s: %v", run.Policy, err)
	case policy.DeletionTimestamp != nil:
		return nil, fmt.Sprintf("DeferPolicy %s was deleted", run.Policy)
	case !policy.SelectsLabels(pod.Labels) || policy.WhenOrDefault() != run.When:
		return nil, fmt.Sprintf("DeferPolicy %s no longer selects the pod", run.Policy)
	case len(policy.Spec.Steps) != run.Steps:
		return nil, fmt.Sprintf("DeferPolicy %s changed its number of steps during the run", run.Policy)
	}
	return policy, ""
}

// nodeLost says why pod's node cannot run its steps: it is gone, or not Ready for longer
// than the policy's grace period. "" when it can.
func (c *Controller) nodeLost(pod *corev1.Pod, policy *v1alpha1.DeferPolicy) string {
	if pod.Spec.NodeName == "" {
		return "the pod was never scheduled to a node: nothing ran, nothing to clean up"
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("the pod's node %s is gone", pod.Spec.NodeName)
	}
	if err != nil {
		return ""
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type != corev1.NodeReady || cond.Status == corev1.ConditionTrue {
			continue
		}
		grace := time.Duration(policy.GracePeriod()) * time.Second
		since := c.now().Sub(cond.LastTransitionTime.Time)
		if since >= grace {
			return fmt.Sprintf("the pod's node %s has not been Ready for %s, longer than the grace period", node.Name, since.Round(time.Second))
		}
		c.addAfter(kindPod, pod.Namespace, pod.Name, grace-since+time.Second)
	}
	return ""
}

// stopped reports whether pod's containers have all stopped.
func stopped(pod *corev1.Pod) bool {
	if podstatus.Finished(pod) {
		return true
	}
	for _, s := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if s.State.Running != nil {
			return false
		}
	}
	return len(pod.Status.ContainerStatuses) > 0
}

// write records run on pod (and its progress), and removes the finalizer when release is
// set. A conflict is retried from a fresh cache.
func (c *Controller) write(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, release bool) error {
	cp := pod.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	if run.Steps > 0 {
		v1alpha1.SetDeferRun(cp, run)
	}
	if release {
		cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == v1alpha1.DeferFinalizer })
	}
	_, err := c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return plumbing.RequeueAfter(100*time.Millisecond, "the pod changed; reading it again")
	case err != nil:
		return fmt.Errorf("recording the defer run on pod %s: %w", pod.Name, err)
	}
	return nil
}

// finish ends run with outcome: it stops nothing (callers stop the steps first), records
// the outcome, releases the finalizer of an AfterTermination run, and reports it.
func (c *Controller) finish(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, outcome v1alpha1.DeferOutcome, message string) error {
	run.Outcome, run.Message = outcome, message
	release := pod.DeletionTimestamp != nil && v1alpha1.HasDeferFinalizer(pod)
	if err := c.write(ctx, pod, run, release); err != nil {
		return err
	}
	c.report(pod, run)
	return nil
}

// release removes the finalizer of a run that already has its outcome.
func (c *Controller) release(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun) error {
	return c.write(ctx, pod, run, true)
}

// report records the event and the metric of run's outcome, and counts it in its policy's
// status.
func (c *Controller) report(pod *corev1.Pod, run *v1alpha1.DeferRun) {
	var started *time.Time
	if run.Started != nil {
		started = &run.Started.Time
	}
	c.metrics.DeferFinished(string(run.When), string(run.Outcome), started)
	who := "Steps skipped" // no policy selected the pod; the message says so
	if run.Policy != "" {
		who = "DeferPolicy " + run.Policy
	}
	switch run.Outcome {
	case v1alpha1.DeferCompleted:
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferCompleted, "%s: all %d steps succeeded", who, run.Steps)
	case v1alpha1.DeferFailed:
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferFailed, "%s: steps failed: %s", who, strings.Join(run.Failed, ", "))
	case v1alpha1.DeferTimedOut:
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferTimedOut, "%s: %s", who, run.Message)
	default:
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferSkipped, "%s: %s", who, run.Message)
	}
	c.log.WithFields(map[string]any{"pod": pod.Namespace + "/" + pod.Name, "policy": run.Policy, "outcome": run.Outcome}).
		Info("defer run ended: " + run.Message)
	if run.Policy != "" {
		c.counted(pod.Namespace, run.Policy, run.Outcome)
	}
}
