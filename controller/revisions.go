package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// dcKind is the kind of the controller ownerReference on every revision.
var dcKind = v1alpha1.SchemeGroupVersion.WithKind("DeploymentConfig")

// revisionNumber is N of revision web-N, read from its revision label.
func revisionNumber(rs *appsv1.ReplicaSet) (int64, bool) {
	n, err := strconv.ParseInt(rs.Labels[v1alpha1.RevisionLabel], 10, 64)
	return n, err == nil && n > 0
}

// revisionPhase is the phase annotation; a revision without one is New.
func revisionPhase(rs *appsv1.ReplicaSet) v1alpha1.RevisionPhase {
	if p := v1alpha1.RevisionPhase(rs.Annotations[v1alpha1.PhaseAnnotation]); p != "" {
		return p
	}
	return v1alpha1.RevisionPhaseNew
}

func isCancelled(rs *appsv1.ReplicaSet) bool {
	return rs.Annotations[v1alpha1.CancelledAnnotation] == "true"
}

// phaseRank orders the phases; a revision's phase only moves to a higher rank.
func phaseRank(p v1alpha1.RevisionPhase) int {
	switch p {
	case v1alpha1.RevisionPhasePending:
		return 1
	case v1alpha1.RevisionPhaseRunning:
		return 2
	case v1alpha1.RevisionPhaseComplete, v1alpha1.RevisionPhaseFailed:
		return 3
	}
	return 0
}

// formatStatusReason renders the status-reason annotation: "<Reason>: <message>".
func formatStatusReason(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + ": " + message
}

// statusReason splits the status-reason annotation into its reason and message.
func statusReason(rs *appsv1.ReplicaSet) (reason, message string) {
	s := rs.Annotations[v1alpha1.StatusReasonAnnotation]
	reason, message, _ = strings.Cut(s, ": ")
	return reason, message
}

// ownedRevisions returns the DC's revisions, oldest first: ReplicaSets whose controller
// ownerReference is this DC and whose revision label parses.
func ownedRevisions(dc *v1alpha1.DeploymentConfig, all []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		ref := metav1.GetControllerOfNoCopy(rs)
		if ref == nil || ref.UID != dc.UID || ref.Kind != dcKind.Kind {
			continue
		}
		if _, ok := revisionNumber(rs); ok {
			out = append(out, rs)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := revisionNumber(out[i])
		b, _ := revisionNumber(out[j])
		return a < b
	})
	return out
}

// findRevision returns revision n among revs, or nil.
func findRevision(revs []*appsv1.ReplicaSet, n int64) *appsv1.ReplicaSet {
	for _, rs := range revs {
		if m, _ := revisionNumber(rs); m == n {
			return rs
		}
	}
	return nil
}

// newestComplete is the newest revision in phase Complete, or nil: the active revision.
func newestComplete(revs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	for i := len(revs) - 1; i >= 0; i-- {
		if revisionPhase(revs[i]) == v1alpha1.RevisionPhaseComplete {
			return revs[i]
		}
	}
	return nil
}

// snapshotSpec decodes a revision's config-snapshot annotation.
func snapshotSpec(rs *appsv1.ReplicaSet) (*v1alpha1.DeploymentConfigSpec, error) {
	return v1alpha1.RevisionSnapshot(rs)
}

// templateChanged reports whether the DC's template (defaults applied) differs
// semantically from the template of the latest revision's snapshot. A snapshot that cannot
// be read counts as a change: one new revision repairs it.
func templateChanged(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) bool {
	spec, err := snapshotSpec(latest)
	if err != nil {
		return true
	}
	return !apiequality.Semantic.DeepEqual(dc.Spec.Template, spec.Template)
}

// hasConfigChangeTrigger reports whether the DC (defaults applied) rolls out on a config change.
func hasConfigChangeTrigger(dc *v1alpha1.DeploymentConfig) bool {
	for _, t := range dc.Spec.Triggers {
		if t.Type == v1alpha1.DeploymentTriggerOnConfigChange {
			return true
		}
	}
	return false
}

// newRevision builds revision n of dc (defaults applied) as DESIGN.md §4 describes it:
// 0 replicas, the config and revision labels on the RS, its selector and its pod template,
// the DC as controller owner, and the annotations with phase New.
func newRevision(dc *v1alpha1.DeploymentConfig, n int64, cause revisionCause) (*appsv1.ReplicaSet, error) {
	snapshot, err := json.Marshal(dc.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the config snapshot of %s: %w", dc.Name, err)
	}
	name := v1alpha1.RevisionName(dc.Name, n)
	revLabels := map[string]string{
		v1alpha1.ConfigLabel:   dc.Name,
		v1alpha1.RevisionLabel: strconv.FormatInt(n, 10),
	}

	selector := &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.ConfigLabel: dc.Name}}
	if dc.Spec.Selector != nil {
		selector = dc.Spec.Selector.DeepCopy()
		if selector.MatchLabels == nil {
			selector.MatchLabels = map[string]string{}
		}
	}
	selector.MatchLabels[v1alpha1.RevisionLabel] = revLabels[v1alpha1.RevisionLabel]
	// Deployer and hook pods carry the config and revision labels too. Whatever selector the
	// user chose, the revision's ReplicaSet must never adopt or count them.
	selector.MatchExpressions = append(selector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
		metav1.LabelSelectorRequirement{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	)

	template := dc.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	for k, v := range revLabels {
		template.Labels[k] = v
	}

	replicas := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: dc.Namespace,
			Labels:    revLabels,
			Annotations: map[string]string{
				v1alpha1.PhaseAnnotation:           string(v1alpha1.RevisionPhaseNew),
				v1alpha1.ConfigSnapshotAnnotation:  string(snapshot),
				v1alpha1.DesiredReplicasAnnotation: strconv.FormatInt(int64(desiredReplicas(dc)), 10),
				v1alpha1.DeployerPodAnnotation:     v1alpha1.DeployerPodName(name),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dc, dcKind)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: dc.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        *template,
		},
	}
	cause.annotate(rs.Annotations)
	return rs, nil
}

// desiredReplicas is spec.replicas of a DC with defaults applied.
func desiredReplicas(dc *v1alpha1.DeploymentConfig) int32 {
	if dc.Spec.Replicas == nil {
		return v1alpha1.DefaultReplicas
	}
	return *dc.Spec.Replicas
}

// rsReplicas is a ReplicaSet's spec.replicas (nil means 1, as for the apiserver).
func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// controllerDC is the name of the DeploymentConfig that controls rs, or "".
func controllerDC(rs *appsv1.ReplicaSet) string {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != dcKind.Kind || ref.APIVersion != dcKind.GroupVersion().String() {
		return ""
	}
	return ref.Name
}
