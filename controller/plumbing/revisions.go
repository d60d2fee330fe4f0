package plumbing

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// StatefulRevisionSelector is the label selector of the ControllerRevisions that record
// StatefulSet revisions; the informer of StatefulRevisionView lists only those.
var StatefulRevisionSelector = v1alpha1.WorkloadLabel + "=" + v1alpha1.WorkloadStatefulSet

// StatefulRevisionView is the informer transform of the StatefulSet revisions' records
// (revision.RecordView), so that the controllers read both kinds of revision from one lister.
func StatefulRevisionView(obj any) (any, error) { return revision.RecordView(obj) }

// RevisionLister lists the revisions of both kinds: the ReplicaSets of the ReplicaSet
// informer, and the views of the StatefulSet revisions' records.
type RevisionLister struct {
	replicaSets appslisters.ReplicaSetLister
	stateful    appslisters.ReplicaSetLister
}

var _ appslisters.ReplicaSetLister = RevisionLister{}

// NewRevisionLister merges the ReplicaSet lister with the views in the StatefulSet
// revisions' informer store (nil: none).
func NewRevisionLister(replicaSets appslisters.ReplicaSetLister, stateful cache.Indexer) RevisionLister {
	l := RevisionLister{replicaSets: replicaSets}
	if stateful != nil {
		l.stateful = appslisters.NewReplicaSetLister(stateful)
	}
	return l
}

// List lists the revisions of every namespace that selector selects.
func (l RevisionLister) List(selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	out, err := l.replicaSets.List(selector)
	if err != nil || l.stateful == nil {
		return out, err
	}
	views, err := l.stateful.List(selector)
	return append(out, views...), err
}

// ReplicaSets lists and gets the revisions of one namespace.
func (l RevisionLister) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	n := namespaceRevisions{replicaSets: l.replicaSets.ReplicaSets(namespace)}
	if l.stateful != nil {
		n.stateful = l.stateful.ReplicaSets(namespace)
	}
	return n
}

// GetPodReplicaSets are the ReplicaSets that select pod; a StatefulSet revision's view is
// never one, as no ReplicaSet owns a StatefulSet's pods.
func (l RevisionLister) GetPodReplicaSets(pod *corev1.Pod) ([]*appsv1.ReplicaSet, error) {
	return l.replicaSets.GetPodReplicaSets(pod)
}

type namespaceRevisions struct {
	replicaSets, stateful appslisters.ReplicaSetNamespaceLister
}

func (n namespaceRevisions) List(selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	out, err := n.replicaSets.List(selector)
	if err != nil || n.stateful == nil {
		return out, err
	}
	views, err := n.stateful.List(selector)
	return append(out, views...), err
}

// Get reads revision name: the ReplicaSet, else the StatefulSet revision's view.
func (n namespaceRevisions) Get(name string) (*appsv1.ReplicaSet, error) {
	rs, err := n.replicaSets.Get(name)
	if err == nil || n.stateful == nil {
		return rs, err
	}
	if view, serr := n.stateful.Get(name); serr == nil {
		return view, nil
	}
	return nil, err
}
