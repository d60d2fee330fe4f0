package v1alpha1

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DeferRunOf reads a pod's defer run record; nil when it has none.
func DeferRunOf(obj metav1.Object) (*DeferRun, error) {
	raw, ok := obj.GetAnnotations()[DeferRunAnnotation]
	if !ok || raw == "" {
		return nil, nil
	}
	var run DeferRun
	if err := json.Unmarshal([]byte(raw), &run); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", DeferRunAnnotation, err)
	}
	// Anyone who may update the pod may write the annotation: a record that does not hold
	// together is refused, never acted on.
	switch {
	case run.Steps < 0 || run.Steps > MaxDeferSteps || run.Current < 0 || run.Current > run.Steps || run.Attempt < 0:
		return nil, fmt.Errorf("annotation %s: step %d of %d (attempt %d) is out of range", DeferRunAnnotation, run.Current, run.Steps, run.Attempt)
	case run.Started != nil && run.Deadline == nil:
		return nil, fmt.Errorf("annotation %s: a started run has no deadline", DeferRunAnnotation)
	}
	return &run, nil
}

// Encode is the run as its annotation's value.
func (r *DeferRun) Encode() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return string(b)
}

// Progress is "<finished steps>/<steps>", the DeferProgressAnnotation.
func (r *DeferRun) Progress() string { return fmt.Sprintf("%d/%d", r.Current, r.Steps) }

// Done reports whether the run has an outcome.
func (r *DeferRun) Done() bool { return r.Outcome != "" }

// SelectsLabels reports whether the policy's selector selects a pod with these labels;
// an invalid or empty selector selects nothing. Stagehand's own run-once pods are never
// selected: a defer step's pod, a deployer pod and a hook pod (which copies the template's
// labels).
func (p *DeferPolicy) SelectsLabels(set map[string]string) bool {
	if p.Spec.Selector == nil || IsStagehandRunOncePod(set) {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(set))
}

// WhenOrDefault is spec.when, AfterTermination when unset.
func (p *DeferPolicy) WhenOrDefault() DeferWhen {
	if p.Spec.When == "" {
		return DeferAfterTermination
	}
	return p.Spec.When
}

// GracePeriod is spec.gracePeriodSeconds, or its default.
func (p *DeferPolicy) GracePeriod() int64 {
	if g := p.Spec.GracePeriodSeconds; g != nil && *g > 0 {
		return *g
	}
	return DefaultDeferGracePeriodSeconds
}

// RestartPolicyOf is the restart policy of step i: its own, else the policy's, else
// Never.
func (p *DeferPolicy) RestartPolicyOf(i int) DeferRestartPolicy {
	if r := p.Spec.Steps[i].RestartPolicy; r != nil && *r != "" {
		return *r
	}
	if p.Spec.RestartPolicy != "" {
		return p.Spec.RestartPolicy
	}
	return DeferRestartNever
}

// HasDeferFinalizer reports whether obj carries DeferFinalizer.
func HasDeferFinalizer(obj metav1.Object) bool {
	return slices.Contains(obj.GetFinalizers(), DeferFinalizer)
}

// IsStagehandRunOncePod reports whether a pod with these labels is one of Stagehand's own
// run-once pods (a defer step, a deployer or a hook pod), which DeferPolicies never select.
func IsStagehandRunOncePod(set map[string]string) bool {
	for _, l := range []string{DeferStepOfLabel, DeployerPodForLabel, HookStageLabel} {
		if _, ok := set[l]; ok {
			return true
		}
	}
	return false
}

// DeferControllerPods selects the pods that the DeferPolicy controller caches: every pod a
// policy may select, and the defer step pods. Deployer and hook pods are left out: no
// policy selects them (IsStagehandRunOncePod) and the deployer-pod informer caches them
// already. With 1,000 DCs rolling at once they are about half of a cluster's pods.
func DeferControllerPods() labels.Selector {
	sel, err := labels.Parse("!" + DeployerPodForLabel + ",!" + HookStageLabel)
	if err != nil {
		panic(err) // constant labels: a failure is a bug caught by the unit test
	}
	return sel
}

// FirstSelecting is the policy, by name the first, of the given when that is not being
// deleted and selects a pod with these labels, and the names of the other such policies;
// nil when none does. The controller, the DC controller and the deployer all choose so.
func FirstSelecting(policies []*DeferPolicy, when DeferWhen, set map[string]string) (*DeferPolicy, []string) {
	var matched []*DeferPolicy
	for _, p := range policies {
		if p.DeletionTimestamp == nil && p.WhenOrDefault() == when && p.SelectsLabels(set) {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		return nil, nil
	}
	slices.SortFunc(matched, func(a, b *DeferPolicy) int { return strings.Compare(a.Name, b.Name) })
	others := make([]string, 0, len(matched)-1)
	for _, p := range matched[1:] {
		others = append(others, p.Name)
	}
	return matched[0], others
}

// HasDeferRun reports whether obj (a pod) carries a defer run record, ended or not.
func HasDeferRun(obj metav1.Object) bool { return obj.GetAnnotations()[DeferRunAnnotation] != "" }

// SetDeferRun writes run onto pod's annotations: the record and its progress. pod must
// be a copy of the cached pod.
func SetDeferRun(pod metav1.Object, run *DeferRun) {
	a := pod.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[DeferRunAnnotation] = run.Encode()
	a[DeferProgressAnnotation] = run.Progress()
	pod.SetAnnotations(a)
}

// DeferProgressOf is pod's "<finished steps>/<steps>", or "" when it has no run.
func DeferProgressOf(obj metav1.Object) string { return obj.GetAnnotations()[DeferProgressAnnotation] }

// DeferReleased reports whether someone released pod from its defer run (kubectl
// stagehand defer release).
func DeferReleased(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[DeferReleasedAnnotation]
	return ok
}

// MarkDeferReleased records on pod (a copy) that it was released from its defer run at.
func MarkDeferReleased(pod metav1.Object, at time.Time) {
	a := pod.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[DeferReleasedAnnotation] = at.UTC().Format(time.RFC3339)
	pod.SetAnnotations(a)
}

// DeferStepFor is the name of the pod that the step pod sp runs for, or "" when sp is no
// step pod.
func DeferStepFor(sp metav1.Object) string { return sp.GetAnnotations()[DeferStepForAnnotation] }
