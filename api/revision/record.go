package revision

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// A DeploymentConfig that runs on a StatefulSet records revision N as the ControllerRevision
// <dc>-<N> (docs/statefulsets.md). The revision model reads it as a ReplicaSet view: the
// ControllerRevision's metadata (name, UID, labels, annotations, owners, resourceVersion),
// and a spec with 0 replicas whose selector selects the StatefulSet's pods of that
// revision, by their controller-revision-hash. So the phases, the snapshot, the history
// and every rollout verb work on both kinds of revision alike; only what moves pods differs.

// ControllerRevisionKind is the kind of a StatefulSet revision's record.
var ControllerRevisionKind = appsv1.SchemeGroupVersion.WithKind("ControllerRevision")

// ReplicaSetKind is the kind of a ReplicaSet revision.
var ReplicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// OfStatefulSet reports whether rs is the view of a StatefulSet revision's record.
func OfStatefulSet(rs *appsv1.ReplicaSet) bool {
	return rs.Labels[v1alpha1.WorkloadLabel] == v1alpha1.WorkloadStatefulSet
}

// Kind is the kind of the object behind revision rs, for ownerReferences and events.
func Kind(rs *appsv1.ReplicaSet) schema.GroupVersionKind {
	if OfStatefulSet(rs) {
		return ControllerRevisionKind
	}
	return ReplicaSetKind
}

// TemplateHash is the StatefulSet's controller-revision-hash of the revision's template,
// or "" while the StatefulSet has not named it yet.
func TemplateHash(rs *appsv1.ReplicaSet) string {
	return rs.Annotations[v1alpha1.TemplateHashAnnotation]
}

// recordData is what a StatefulSet revision's ControllerRevision holds in data: the pod
// template of the revision and the StatefulSet's selector, as the DeploymentConfig had
// them. It is immutable, as a ControllerRevision's data is.
type recordData struct {
	Selector        *metav1.LabelSelector `json:"selector"`
	MinReadySeconds int32                 `json:"minReadySeconds,omitempty"`
	Template        json.RawMessage       `json:"template"`
}

// ToControllerRevision is the record of the StatefulSet revision rs (a view built by New,
// or read by FromControllerRevision): its metadata, revision number and data.
func ToControllerRevision(rs *appsv1.ReplicaSet) (*appsv1.ControllerRevision, error) {
	n, ok := Number(rs)
	if !ok || !OfStatefulSet(rs) {
		return nil, fmt.Errorf("%s is not a StatefulSet revision", rs.Name)
	}
	template, err := json.Marshal(rs.Spec.Template)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(recordData{Selector: withoutHash(rs.Spec.Selector), MinReadySeconds: rs.Spec.MinReadySeconds, Template: template})
	if err != nil {
		return nil, err
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: *rs.ObjectMeta.DeepCopy(), Revision: n, Data: runtime.RawExtension{Raw: data}}
	return cr, nil
}

// FromControllerRevision reads the record of a StatefulSet revision as its ReplicaSet
// view: 0 replicas, and a selector of the StatefulSet's pods whose controller-revision-hash
// is the revision's template hash (none while it is unknown).
func FromControllerRevision(cr *appsv1.ControllerRevision) (*appsv1.ReplicaSet, error) {
	var data recordData
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("reading revision %s: %w", cr.Name, err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: *cr.ObjectMeta.DeepCopy()}
	if err := json.Unmarshal(data.Template, &rs.Spec.Template); err != nil {
		return nil, fmt.Errorf("reading the template of revision %s: %w", cr.Name, err)
	}
	zero := int32(0)
	rs.Spec.Replicas = &zero
	rs.Spec.MinReadySeconds = data.MinReadySeconds
	rs.Spec.Selector = withHash(data.Selector, TemplateHash(rs))
	return rs, nil
}

// withHash is selector narrowed to the pods of the template hash; "" selects none, as no
// StatefulSet pod has an empty hash.
func withHash(selector *metav1.LabelSelector, hash string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	if selector != nil {
		sel = selector.DeepCopy()
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.ControllerRevisionHashLabelKey] = hash
	return sel
}

// withoutHash is the selector that withHash narrowed, as the StatefulSet has it.
func withoutHash(selector *metav1.LabelSelector) *metav1.LabelSelector {
	if selector == nil {
		return nil
	}
	sel := selector.DeepCopy()
	delete(sel.MatchLabels, appsv1.ControllerRevisionHashLabelKey)
	return sel
}

// WorkloadSelector is the selector of the StatefulSet that runs revision rs: the view's,
// without the template hash.
func WorkloadSelector(rs *appsv1.ReplicaSet) *metav1.LabelSelector {
	return withoutHash(rs.Spec.Selector)
}

// RecordView is the informer transform of the StatefulSet revisions' records: it stores
// each ControllerRevision as its ReplicaSet view, without managed fields. A record whose
// data cannot be read is stored with its metadata alone (no template, a selector of no
// pod): its phase and snapshot annotations still say what it is. Other objects pass as
// they are.
func RecordView(obj any) (any, error) {
	cr, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return obj, nil
	}
	cr.ManagedFields = nil
	view, err := FromControllerRevision(cr)
	if err != nil {
		zero := int32(0)
		view = &appsv1.ReplicaSet{ObjectMeta: cr.ObjectMeta}
		view.Spec.Replicas = &zero
		view.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1.ControllerRevisionHashLabelKey: ""}}
	}
	return view, nil
}
