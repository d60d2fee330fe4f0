package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The BeforeEviction phase: Stagehand as an eviction responder of the EvictionRequest API
// (lifecycle.k8s.io/v1alpha1, Kubernetes 1.37 alpha). docs/defer.md, "BeforeEviction".
const (
	// EvictionResponderName is the name Stagehand answers to in a pod's
	// spec.evictionResponders and in an Eviction's status.
	EvictionResponderName = GroupName + "/defer"
	// EvictionResponderPriority is the priority the admission policy gives it: above the
	// 10000 that the API asks of a pod's managing controller, so that the steps run while
	// the pod still serves, before anything that ends it.
	EvictionResponderPriority int32 = 20000

	// DeferEvictionAnnotation, on a pod whose BeforeEviction run serves an Eviction, is
	// that Eviction's UID. A run for another Eviction (an earlier one, withdrawn) does
	// not count for this one.
	DeferEvictionAnnotation = GroupName + "/defer-eviction"

	// EvictionDriverLabel marks the Evictions that Stagehand created and drives itself,
	// because no evictionrequest-controller runs (Kubernetes 1.37 ships none).
	EvictionDriverLabel = GroupName + "/eviction-driver"

	// EvictionRequestConditionDeferSteps is the condition Stagehand keeps on an
	// EvictionRequest whose pod names it: the steps' progress, the last heartbeat and the
	// outcome. The EvictionRequest's status has no other place for them.
	EvictionRequestConditionDeferSteps = GroupName + "/DeferSteps"
)

// HasEvictionResponder reports whether pod names Stagehand in spec.evictionResponders.
func HasEvictionResponder(pod *corev1.Pod) bool {
	for _, r := range pod.Spec.EvictionResponders {
		if r.Name == EvictionResponderName {
			return true
		}
	}
	return false
}

// DeferEvictionOf is the UID of the Eviction that pod's BeforeEviction run serves, or "".
func DeferEvictionOf(obj metav1.Object) string { return obj.GetAnnotations()[DeferEvictionAnnotation] }

// EvictionFailurePolicyOrDefault is spec.evictionFailurePolicy, Block when unset.
func (p *DeferPolicy) EvictionFailurePolicyOrDefault() DeferEvictionFailurePolicy {
	if p.Spec.EvictionFailurePolicy == "" {
		return DeferEvictionBlock
	}
	return p.Spec.EvictionFailurePolicy
}

// BeforeStop reports whether w runs while the pod still runs (BeforeScaleDown,
// BeforeEviction). A pod runs at most one such run: the second way out finds the first
// one's outcome.
func (w DeferWhen) BeforeStop() bool { return w == DeferBeforeScaleDown || w == DeferBeforeEviction }

// The ConfigMap in the controller's namespace where it records what the cluster serves,
// as the param of deploy/policies/defer-before-eviction.yaml.
const (
	CapabilitiesConfigMap        = "stagehand-capabilities"
	CapabilityEvictionRequestAPI = "evictionRequestAPI"
	CapabilityServed             = "served"
	CapabilityNotServed          = "not-served"
)
