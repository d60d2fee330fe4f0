package deferpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// evictRetry is the wait between two pods/eviction calls that a PodDisruptionBudget
// refused.
const evictRetry = 5 * time.Second

// maxMessage is the longest message a ResponderStatus takes.
const maxMessage = 4000

// clip cuts msg to maxMessage bytes, on a rune boundary, marking the cut.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// answer is what the responder has to say about a pod's BeforeEviction steps.
type answer struct {
	message string
	done    bool // the eviction may go on
	blocked bool // the steps failed and the policy blocks the eviction
	start   *v1alpha1.DeferPolicy
}

// answerFor reads where pod's steps are for the Eviction ev.
func (c *Controller) answerFor(pod *corev1.Pod, ev *lifecyclev1alpha1.Eviction) (answer, error) {
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil {
		run = nil
	}
	switch {
	case run != nil && run.When == v1alpha1.DeferBeforeEviction && v1alpha1.DeferEvictionOf(pod) == string(ev.UID):
		return c.answerRun(pod.Namespace, run, "DeferPolicy "+run.Policy), nil
	case pod.DeletionTimestamp != nil:
		return answer{done: true, message: "the pod is being deleted already: its steps before a stop no longer apply"}, nil
	case run != nil && run.When == v1alpha1.DeferBeforeEviction && !run.Done():
		// The run of an earlier Eviction, withdrawn: the pod's sync stops it first.
		return answer{message: "the steps of an earlier, withdrawn eviction are stopping"}, nil
	case run != nil && run.When == v1alpha1.DeferBeforeScaleDown:
		// A scale-down chose the pod and ran, or runs, its steps while it serves: the
		// steps before a pod stops run once (docs/defer.md).
		if !run.Done() {
			return answer{message: fmt.Sprintf("the pod's BeforeScaleDown run (DeferPolicy %s) is at step %d/%d; waiting for it", run.Policy, run.Current+1, run.Steps)}, nil
		}
		return answer{done: true, message: fmt.Sprintf("the pod ran its BeforeScaleDown steps (DeferPolicy %s: %s): they do not run again", run.Policy, run.Outcome)}, nil
	}
	policy, _, err := c.selecting(pod, v1alpha1.DeferBeforeEviction)
	if err != nil {
		return answer{}, err
	}
	if policy == nil {
		return answer{done: true, message: "no BeforeEviction DeferPolicy selects the pod: nothing to run"}, nil
	}
	return answer{start: policy, message: fmt.Sprintf("DeferPolicy %s: %d steps start", policy.Name, len(policy.Spec.Steps))}, nil
}

// answerRun is the answer of a BeforeEviction run of this Eviction.
func (c *Controller) answerRun(ns string, run *v1alpha1.DeferRun, who string) answer {
	switch run.Outcome {
	case "":
		step := ""
		if run.Current < run.Steps {
			step = fmt.Sprintf(": step %d/%d running", run.Current+1, run.Steps)
		}
		return answer{message: who + step}
	case v1alpha1.DeferCompleted:
		return answer{done: true, message: fmt.Sprintf("%s: all %d steps succeeded", who, run.Steps)}
	case v1alpha1.DeferSkipped:
		return answer{done: true, message: fmt.Sprintf("%s: the steps were skipped (%s); the eviction goes on", who, run.Message)}
	}
	policy, err := c.policies.DeferPolicies(ns).Get(run.Policy)
	if err == nil && policy.EvictionFailurePolicyOrDefault() == v1alpha1.DeferEvictionEvict {
		return answer{done: true, message: fmt.Sprintf("%s: %s; the eviction goes on (evictionFailurePolicy: Evict)", who, run.Message)}
	}
	return answer{blocked: true, message: fmt.Sprintf("%s: %s; the eviction is blocked (evictionFailurePolicy: Block): the pod keeps running", who, run.Message)}
}

// respond runs pod's BeforeEviction steps while Stagehand is ev's Active responder, and
// reports them in its ResponderStatus: a heartbeat at most every c.heartbeat, the
// progress as the message, the completion once the eviction may go on.
func (c *Controller) respond(ctx context.Context, pod *corev1.Pod, ev *lifecyclev1alpha1.Eviction, driven bool) error {
	a, err := c.answerFor(pod, ev)
	if err != nil {
		return err
	}
	if a.start != nil {
		return c.startEvictionRun(ctx, pod, ev, a.start)
	}
	a.message = clip(a.message)
	cp := ev.DeepCopy()
	rs := responderStatus(&cp.Status, v1alpha1.EvictionResponderName)
	if rs == nil {
		return nil
	}
	if a.blocked && driven && ptr.Deref(rs.Message, "") == a.message {
		// Said; now the driver ends the Eviction so that nothing evicts the pod.
		end(&cp.Status, lifecyclev1alpha1.EvictionConditionFailed, reasonBlocked, v1alpha1.EvictionResponderName+": "+a.message,
			lifecyclev1alpha1.ResponderStateInterrupted, cp.Generation)
		return c.writeEviction(ctx, cp)
	}
	now := c.now()
	changed := ptr.Deref(rs.Message, "") != a.message
	if changed && a.blocked {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferEvictionBlocked, "Eviction %s: %s", ev.Name, a.message)
	}
	rs.Message = ptr.To(a.message)
	if rs.HeartbeatTime == nil || now.Sub(rs.HeartbeatTime.Time) >= c.heartbeat || a.done {
		rs.HeartbeatTime, changed = &metav1.Time{Time: now}, true
	}
	if a.done {
		rs.CompletionTime = &metav1.Time{Time: now}
	}
	if !a.done {
		c.addAfter(kindEvict, pod.Namespace, pod.Name, c.heartbeat)
	}
	if !changed {
		return nil
	}
	return c.writeEviction(ctx, cp)
}

// startEvictionRun marks pod with a BeforeEviction run of policy for ev; the pod's sync
// then runs the steps, as for a scale-down.
func (c *Controller) startEvictionRun(ctx context.Context, pod *corev1.Pod, ev *lifecyclev1alpha1.Eviction, policy *v1alpha1.DeferPolicy) error {
	if pending, err := c.clearEarlierSteps(ctx, pod); pending || err != nil {
		return err
	}
	cp := pod.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[v1alpha1.DeferEvictionAnnotation] = string(ev.UID)
	run := &v1alpha1.DeferRun{Policy: policy.Name, PolicyUID: string(policy.UID), When: v1alpha1.DeferBeforeEviction, Steps: len(policy.Spec.Steps)}
	if err := c.write(ctx, cp, run, false); err != nil {
		return err
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStarted,
		"Eviction %s requested: DeferPolicy %s runs %d steps first, within %ds", ev.Name, policy.Name, run.Steps, policy.GracePeriod())
	return nil
}

// evict plays the default evictor of an Eviction Stagehand drives: pods/eviction, which
// PodDisruptionBudgets decide, again every evictRetry while one refuses.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod, ev *lifecyclev1alpha1.Eviction) error {
	if rs := responderStatus(&ev.Status, evictorName); rs == nil || rs.CompletionTime != nil {
		return nil
	}
	err := c.kube.CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	})
	cp := ev.DeepCopy()
	rs := responderStatus(&cp.Status, evictorName)
	now := c.now()
	switch {
	case err == nil:
		rs.Message = ptr.To("the pod was evicted through pods/eviction")
		rs.HeartbeatTime, rs.CompletionTime = &metav1.Time{Time: now}, &metav1.Time{Time: now}
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferEvicting, "Eviction %s: the responders are done; evicted through pods/eviction", ev.Name)
	case apierrors.IsTooManyRequests(err):
		msg := clip("pods/eviction refused: " + err.Error() + "; trying again every " + evictRetry.String())
		if ptr.Deref(rs.Message, "") == msg && rs.HeartbeatTime != nil && now.Sub(rs.HeartbeatTime.Time) < c.heartbeat {
			return plumbing.RequeueAfter(evictRetry, "a PodDisruptionBudget refuses the eviction")
		}
		rs.Message, rs.HeartbeatTime = ptr.To(msg), &metav1.Time{Time: now}
		if err := c.writeEviction(ctx, cp); err != nil {
			return err
		}
		return plumbing.RequeueAfter(evictRetry, "a PodDisruptionBudget refuses the eviction")
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // the pod is gone, or another one has its name: targetGone ends the Eviction
	default:
		return fmt.Errorf("evicting pod %s: %w", pod.Name, err)
	}
	return c.writeEviction(ctx, cp)
}

// evictionWithdrawn says why a BeforeEviction run must stop before its end: its Eviction
// is gone, or no longer has Stagehand Active (every request withdrawn, or the eviction
// ended otherwise). "" while it stands, and for any other run.
func (c *Controller) evictionWithdrawn(pod *corev1.Pod, run *v1alpha1.DeferRun) string {
	if run.When != v1alpha1.DeferBeforeEviction || c.evictions == nil {
		return ""
	}
	all, err := c.evictions.Evictions(pod.Namespace).List(everything)
	if err != nil {
		return ""
	}
	uid := v1alpha1.DeferEvictionOf(pod)
	for _, e := range all {
		if string(e.UID) != uid {
			continue
		}
		state := stateOf(&e.Status, v1alpha1.EvictionResponderName)
		if state == lifecyclev1alpha1.ResponderStateActive && !final(&e.Status) {
			return ""
		}
		why := "every EvictionRequest was withdrawn"
		if state != lifecyclev1alpha1.ResponderStateCanceled {
			why = "Stagehand is no longer its Active responder (" + string(state) + ")"
		}
		return fmt.Sprintf("Eviction %s: %s; the running step was stopped and the pod keeps running", e.Name, why)
	}
	return "its Eviction is gone; the running step was stopped and the pod keeps running"
}

// clearEarlierSteps deletes the step pods of an earlier run before the stop (an eviction
// withdrawn after its steps, or some of them, ran): a new run's steps have the same
// names, and must not take the old pods' outcomes for their own. Their logs go with them.
// pending says that some are still there: the new run waits until the cache has seen
// them go.
func (c *Controller) clearEarlierSteps(ctx context.Context, pod *corev1.Pod) (pending bool, err error) {
	if run, err := v1alpha1.DeferRunOf(pod); err != nil || run == nil || !run.When.BeforeStop() {
		return false, nil
	}
	steps, err := c.pods.Pods(pod.Namespace).List(deferstep.Selector(pod))
	if err != nil {
		return false, err
	}
	for _, sp := range steps {
		if !strings.HasSuffix(sp.Name, "-b") {
			continue
		}
		pending = true
		if sp.DeletionTimestamp != nil {
			continue
		}
		err := c.kube.CoreV1().Pods(sp.Namespace).Delete(ctx, sp.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](1), Preconditions: &metav1.Preconditions{UID: &sp.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return true, fmt.Errorf("deleting step pod %s of an earlier run: %w", sp.Name, err)
		}
	}
	if pending {
		return true, plumbing.RequeueAfter(time.Second, "the step pods of an earlier run are going")
	}
	return false, nil
}
