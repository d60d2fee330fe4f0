package deferpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// advance moves run one transition on: it starts the clock, creates the current step's
// pod, records the step's outcome, or ends the run. Each transition is written to the pod
// before the next one happens, so that a restart resumes from it.
func (c *Controller) advance(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy) error {
	now := c.now()
	if run.Started == nil {
		run.Started = &metav1.Time{Time: now}
		run.Deadline = &metav1.Time{Time: now.Add(time.Duration(policy.GracePeriod()) * time.Second)}
		return c.write(ctx, pod, run, false)
	}
	// Every step has ended: the outcome stands even if the deadline passed since.
	if run.Current >= run.Steps {
		if len(run.Failed) > 0 {
			return c.finish(ctx, pod, run, v1alpha1.DeferFailed, "steps failed: "+strings.Join(run.Failed, ", "))
		}
		return c.finish(ctx, pod, run, v1alpha1.DeferCompleted, fmt.Sprintf("all %d steps succeeded", run.Steps))
	}
	if !now.Before(run.Deadline.Time) {
		c.stopSteps(ctx, pod)
		return c.finish(ctx, pod, run, v1alpha1.DeferTimedOut, fmt.Sprintf(
			"gracePeriodSeconds (%ds) ran out during step %d/%d (%s); the step was stopped and %d steps were skipped",
			policy.GracePeriod(), run.Current+1, run.Steps, policy.Spec.Steps[run.Current].Name, run.Steps-run.Current-1))
	}
	// Come back at the deadline whatever happens in between.
	c.addAfter(kindPod, pod.Namespace, pod.Name, run.Deadline.Sub(now)+50*time.Millisecond)
	if run.Attempt == 0 {
		run.Attempt = 1 // recorded before the pod exists: a restart finds the pod by name
		return c.write(ctx, pod, run, false)
	}
	if run.NotBefore != nil && now.Before(run.NotBefore.Time) {
		return plumbing.RequeueAfter(run.NotBefore.Sub(now), "back-off before the step's next attempt")
	}
	step := policy.Spec.Steps[run.Current]
	name := deferstep.Name(pod, run.When, run.Current, run.Attempt)
	sp, err := c.pods.Pods(pod.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.createStep(ctx, pod, run, policy, name)
	}
	if err != nil {
		return err
	}
	switch sp.Status.Phase {
	case corev1.PodSucceeded:
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStepSucceeded,
			"Step %d/%d (%s) succeeded in pod %s", run.Current+1, run.Steps, step.Name, sp.Name)
		c.nextStep(run)
		return c.write(ctx, pod, run, false)
	case corev1.PodFailed:
		return c.stepFailed(ctx, pod, run, policy, "its pod "+sp.Name+" failed"+deferstep.ExitNote(sp))
	}
	return nil // the step pod's updates bring the pod back
}

func (c *Controller) nextStep(run *v1alpha1.DeferRun) {
	run.Current++
	run.Attempt = 0
	run.NotBefore = nil
	run.QuotaWaits = 0
}

// stepFailed records a failed attempt: OnFailure tries again after a back-off, Never moves
// on to the next step.
func (c *Controller) stepFailed(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, why string) error {
	step := policy.Spec.Steps[run.Current]
	if policy.RestartPolicyOf(run.Current) == v1alpha1.DeferRestartOnFailure {
		delay := deferstep.RetryDelay(run.Attempt)
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
			"Step %d/%d (%s) attempt %d failed: %s; runs again in %s (restartPolicy OnFailure)",
			run.Current+1, run.Steps, step.Name, run.Attempt, why, delay)
		run.Attempt++
		run.NotBefore = &metav1.Time{Time: c.now().Add(delay)}
		return c.write(ctx, pod, run, false)
	}
	c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
		"Step %d/%d (%s) failed: %s; moving on (restartPolicy Never)", run.Current+1, run.Steps, step.Name, why)
	run.Failed = append(run.Failed, step.Name)
	c.nextStep(run)
	return c.write(ctx, pod, run, false)
}

// createStep creates the current step's pod. An exceeded ResourceQuota is waited for with
// a capped back-off, within the grace period (the ReplicaSet controller treats it so too);
// a refusal that retrying cannot fix (a volume the step may not share, an admission
// denial, a quota or LimitRange that wants other resources) fails the attempt with the
// apiserver's message and the field to set.
func (c *Controller) createStep(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, name string) error {
	sp, err := deferstep.Build(pod, run, policy, name, stepResources(policy.Spec.Steps[run.Current].Resources, c.stepResources))
	if err != nil {
		return c.stepFailedForGood(ctx, pod, run, policy, err.Error())
	}
	_, err = c.kube.CoreV1().Pods(pod.Namespace).Create(ctx, sp, metav1.CreateOptions{})
	switch refusalOf(err) {
	case refusalNone:
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStepStarted,
			"Step %d/%d (%s) started in pod %s on node %s", run.Current+1, run.Steps, policy.Spec.Steps[run.Current].Name, name, pod.Spec.NodeName)
		return nil
	case refusalExists:
		return nil // created before a restart; the cache will show it
	case refusalQuotaExceeded:
		return c.waitForQuota(ctx, pod, run, policy, err)
	case refusalFinal:
		return c.stepFailedForGood(ctx, pod, run, policy, "its pod was refused: "+refusedMessage(err, run.Current))
	}
	return fmt.Errorf("creating the step pod %s: %w", name, err)
}

// stepFailedForGood records a step that cannot run at all, whatever its restart policy,
// and moves on.
func (c *Controller) stepFailedForGood(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, why string) error {
	step := policy.Spec.Steps[run.Current]
	c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
		"Step %d/%d (%s) cannot run: %s", run.Current+1, run.Steps, step.Name, why)
	run.Failed = append(run.Failed, step.Name)
	c.nextStep(run)
	return c.write(ctx, pod, run, false)
}

// stopSteps deletes the step pods of pod that still run (deferstep.Stop), as its cache
// shows them.
func (c *Controller) stopSteps(ctx context.Context, pod *corev1.Pod) {
	steps, err := c.pods.Pods(pod.Namespace).List(deferstep.Selector(pod))
	if err != nil {
		return
	}
	if _, err := deferstep.Stop(ctx, c.kube.CoreV1(), steps); err != nil {
		c.log.WithError(err).WithField("pod", pod.Namespace+"/"+pod.Name).Warn("stopping the step pods")
	}
}
