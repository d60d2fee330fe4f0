package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// What `get` reads of a DC that runs on a StatefulSet (docs/statefulsets.md): its
// revisions are ControllerRevisions, read as ReplicaSet views; its StatefulSet; and the
// StatefulSet's pods, which the tree puts under a revision by their template hash.

// podLists are the lists that find the DC's pods: those with its config label (deployer,
// hook and application pods) and, for a StatefulSet DC, those its selector selects: the
// pods of a template that adopt took over as it was carry no config label.
func (g *getter) podLists(dc *v1alpha1.DeploymentConfig) []metav1.ListOptions {
	lists := []metav1.ListOptions{g.byConfig()}
	if dc.Spec.StatefulSet == nil || dc.Spec.Selector == nil {
		return lists
	}
	if sel, err := metav1.LabelSelectorAsSelector(dc.Spec.Selector); err == nil && !sel.Empty() {
		lists = append(lists, metav1.ListOptions{LabelSelector: sel.String()})
	}
	return lists
}

// mergePods joins lists of pods, each pod once (by name: they are of one namespace), in
// the order found.
func mergePods(lists [][]*corev1.Pod) []*corev1.Pod {
	if len(lists) == 1 {
		return lists[0]
	}
	var out []*corev1.Pod
	seen := map[string]bool{}
	for _, list := range lists {
		for _, p := range list {
			if !seen[p.Name] {
				seen[p.Name] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// statefulSet reads the StatefulSet of a StatefulSet DC: nil for a ReplicaSet DC, or
// while it does not exist.
func (g *getter) statefulSet(ctx context.Context, dc *v1alpha1.DeploymentConfig) (*appsv1.StatefulSet, error) {
	if dc.Spec.StatefulSet == nil {
		return nil, nil
	}
	set, err := g.kube.AppsV1().StatefulSets(g.ns).Get(ctx, dc.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the StatefulSet of %s: %w", dc.Name, err)
	}
	return set, nil
}

// statefulInformers cache a StatefulSet DC's revisions (its ControllerRevisions, with the
// selector internal/revisions lists them by) and its StatefulSet.
func (g *getter) statefulInformers() (records, set cache.SharedIndexInformer) {
	byRecord := func(o *metav1.ListOptions) { o.LabelSelector = revisions.StatefulSelector(g.name) }
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", g.name).String()
	}
	return appsinformers.NewFilteredControllerRevisionInformer(g.kube, g.ns, 0, cache.Indexers{}, byRecord),
		appsinformers.NewFilteredStatefulSetInformer(g.kube, g.ns, 0, cache.Indexers{}, byName)
}

// revisionOf is a cached revision: a ReplicaSet, or the view of a StatefulSet revision's
// ControllerRevision; nil for a record whose data cannot be read (`get` without --watch
// fails on it and says why).
func revisionOf(obj any) *appsv1.ReplicaSet {
	switch x := obj.(type) {
	case *appsv1.ReplicaSet:
		return x
	case *appsv1.ControllerRevision:
		view, err := revision.FromControllerRevision(x)
		if err != nil {
			return nil
		}
		return view
	}
	return nil
}
