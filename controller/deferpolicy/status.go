package deferpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// syncPolicyStatus writes a policy's live counts (pods matched, in progress) and its Ready
// condition. The run counters are added by counted, as runs end.
func (c *Controller) syncPolicyStatus(ctx context.Context, ns, name string) error {
	policy, err := c.policies.DeferPolicies(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(everything)
	if err != nil {
		return err
	}
	var matched, inProgress, lacking int32
	for _, p := range pods {
		if _, isStep := p.Labels[v1alpha1.DeferStepOfLabel]; isStep {
			continue
		}
		if run, err := v1alpha1.DeferRunOf(p); err == nil && run != nil && run.Policy == name && !run.Done() {
			inProgress++
		}
		if !policy.SelectsLabels(p.Labels) {
			continue
		}
		matched++
		if p.DeletionTimestamp == nil && !podstatus.Finished(p) && !covered(policy, p) {
			lacking++
		}
	}
	status := policy.Status.DeepCopy()
	status.ObservedGeneration = policy.Generation
	status.Steps = int32(len(policy.Spec.Steps))
	status.PodsMatched, status.InProgress = matched, inProgress
	ready := c.readiness(policy, matched, lacking)
	if old := meta.FindStatusCondition(policy.Status.Conditions, ready.Type); ready.Reason == reasonNotServed && (old == nil || old.Reason != ready.Reason) {
		c.recorder.Event(policy, corev1.EventTypeWarning, reasonNotServed, ready.Message)
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	if equality.Semantic.DeepEqual(status, &policy.Status) {
		return nil
	}
	cp := policy.DeepCopy()
	cp.Status = *status
	_, err = c.stagehand.StagehandV1alpha1().DeferPolicies(ns).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		if apierrors.IsConflict(err) {
			c.add(kindPolicy, ns, name)
		}
		return nil
	}
	return err
}

// counted adds one run's outcome to its policy's counters, from the live object.
func (c *Controller) counted(ns, name string, outcome v1alpha1.DeferOutcome) {
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch outcome {
		case v1alpha1.DeferCompleted:
			p.Status.Completed++
		case v1alpha1.DeferFailed:
			p.Status.Failed++
		case v1alpha1.DeferTimedOut:
			p.Status.TimedOut++
		default:
			p.Status.Skipped++
		}
		_, err = c.stagehand.StagehandV1alpha1().DeferPolicies(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.WithError(err).WithField("policy", ns+"/"+name).Warn("counting a defer run's outcome")
	}
	c.add(kindPolicy, ns, name)
}

// reasonNotServed: a BeforeEviction policy where the apiserver does not serve the
// EvictionRequest API.
const reasonNotServed = "EvictionAPINotServed"

// covered reports whether pod, running and selected by policy, would get its steps:
// the finalizer for AfterTermination, Stagehand among its eviction responders for
// BeforeEviction. A scale-down needs neither.
func covered(policy *v1alpha1.DeferPolicy, pod *corev1.Pod) bool {
	switch policy.WhenOrDefault() {
	case v1alpha1.DeferAfterTermination:
		return v1alpha1.HasDeferFinalizer(pod)
	case v1alpha1.DeferBeforeEviction:
		return v1alpha1.HasEvictionResponder(pod)
	}
	return true
}

// readiness is the policy's Ready condition, from the number of pods it selects and of
// those that lack what their steps need.
func (c *Controller) readiness(policy *v1alpha1.DeferPolicy, matched, lacking int32) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.DeferPolicyConditionReady, Status: metav1.ConditionTrue,
		Reason: "Active", Message: fmt.Sprintf("selects %d pods", matched), ObservedGeneration: policy.Generation}
	switch when := policy.WhenOrDefault(); {
	case when == v1alpha1.DeferBeforeEviction && c.evictions == nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, reasonNotServed
		ready.Message = "when: BeforeEviction needs the EvictionRequest API (lifecycle.k8s.io/v1alpha1: Kubernetes 1.37 or later, " +
			"with the feature gate EvictionRequestAPI and --runtime-config=lifecycle.k8s.io/v1alpha1=true), which this cluster " +
			"did not serve when the controller started: no eviction runs these steps. Turn the API on and restart the controller, " +
			"or use when: AfterTermination (docs/defer.md)"
	case lacking == 0:
	case when == v1alpha1.DeferAfterTermination:
		ready.Status, ready.Reason = metav1.ConditionFalse, "PodsWithoutFinalizer"
		ready.Message = fmt.Sprintf("%d of the %d pods it selects lack the finalizer %s: their steps would not run if they were deleted now. "+
			"The controller adds it; if this stays, check that the MutatingAdmissionPolicy stagehand-defer-finalizer is installed (docs/defer.md)",
			lacking, matched, v1alpha1.DeferFinalizer)
	case when == v1alpha1.DeferBeforeEviction:
		ready.Status, ready.Reason = metav1.ConditionFalse, "PodsWithoutResponder"
		ready.Message = fmt.Sprintf("%d of the %d pods it selects do not name %s in spec.evictionResponders: an eviction would not run their steps. "+
			"The field is set only at a pod's creation, by the MutatingAdmissionPolicy stagehand-defer-finalizer: recreate the pods "+
			"created before the policy (a rollout), and check that the admission policy is installed (docs/defer.md)",
			lacking, matched, v1alpha1.EvictionResponderName)
	}
	return ready
}
