package tree

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The rows of a DeploymentConfig that runs on a StatefulSet (docs/statefulsets.md). Its
// revisions are views of ControllerRevisions and run no pod of their own: the pods are
// the StatefulSet's, and a pod runs the revision whose template hash is the pod's
// controller-revision-hash. The StatefulSet is a row of its own, above the revisions,
// with the pods of no known revision under it.

// statefulSet is the StatefulSet of a DC with spec.statefulSet, or nil.
func (o *Objects) statefulSet() *appsv1.StatefulSet {
	if o.DC.Spec.StatefulSet == nil {
		return nil
	}
	return o.StatefulSet
}

// statefulRevisions are the revisions of a StatefulSet DC, oldest first, each a copy of
// its view whose replicas and ready replicas count the pods that run it, and those pods.
// A pod runs the newest revision with its template hash: a rollback to revision N
// records a new revision with N's very template, and so N's hash.
func (o *Objects) statefulRevisions() ([]*appsv1.ReplicaSet, appPods) {
	revs := o.Revisions()
	byHash := map[string]string{} // template hash -> the newest revision's name
	for _, rs := range revs {
		if hash := revision.TemplateHash(rs); hash != "" {
			byHash[hash] = rs.Name
		}
	}
	pods := appPods{of: map[string][]*corev1.Pod{}}
	for _, p := range o.Pods {
		if !o.ofStatefulSet(p) {
			continue
		}
		if name, ok := byHash[p.Labels[appsv1.ControllerRevisionHashLabelKey]]; ok {
			pods.of[name] = append(pods.of[name], p)
		} else {
			pods.unknown = append(pods.unknown, p)
		}
	}
	counted := make([]*appsv1.ReplicaSet, 0, len(revs))
	for _, rs := range revs {
		view := rs.DeepCopy()
		n := int32(len(pods.of[rs.Name]))
		view.Spec.Replicas = &n
		view.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: countReady(pods.of[rs.Name])}
		counted = append(counted, view)
	}
	return counted, pods
}

// ofStatefulSet reports whether p is an application pod of the DC's StatefulSet: one that
// the StatefulSet controls, or one with the config label that is no deployer, hook or
// defer step pod.
func (o *Objects) ofStatefulSet(p *corev1.Pod) bool {
	if v1alpha1.IsStagehandRunOncePod(p.Labels) {
		return false
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "StatefulSet" && ref.Name == o.DC.Name {
		return true
	}
	return p.Labels[v1alpha1.ConfigLabel] == o.DC.Name
}

// countReady counts the pods that are Ready (and not terminating or finished).
func countReady(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if ready, _ := podstatus.PodAvailable(p, 0, time.Time{}); ready {
			n++
		}
	}
	return n
}

// workloadLines name the StatefulSet of a StatefulSet DC, and say that maxSurge, set to
// something other than its default, does not apply; none for a ReplicaSet DC.
func (o *Objects) workloadLines() []headerLine {
	if o.DC.Spec.StatefulSet == nil {
		return nil
	}
	text := "StatefulSet " + o.DC.Name
	if p := o.DC.Spec.Strategy.RollingParams; p != nil && p.MaxSurge != nil {
		if surge := p.MaxSurge.String(); surge != v1alpha1.DefaultMaxSurge && surge != "0" && surge != "0%" {
			text += ", maxSurge " + surge + " ignored: a StatefulSet's pods keep their names, so there is no surge pod"
		}
	}
	return []headerLine{{key: "Workload", text: text}}
}

// statefulSetNode is the StatefulSet of a StatefulSet DC: whether every pod runs its
// template and is ready, which revision's template it holds, its counts and partition,
// and under it the pods of no known revision.
func (o *Objects) statefulSetNode(unknown []*corev1.Pod, deferText DeferText) *treeNode {
	set := o.StatefulSet
	if set == nil {
		return &treeNode{name: o.DC.Name, kind: "StatefulSet", mark: markInactive, status: "Not created",
			children: podNodes(unknown, deferText)}
	}
	replicas := int32(1)
	if set.Spec.Replicas != nil {
		replicas = *set.Spec.Replicas
	}
	st := set.Status
	n := &treeNode{name: set.Name, kind: "StatefulSet", created: set.CreationTimestamp.Time, children: podNodes(unknown, deferText)}
	switch {
	case replicas == 0 && st.Replicas == 0:
		n.mark, n.status = markInactive, "Scaled to 0"
	case st.ObservedGeneration < set.Generation || st.Replicas != replicas || st.UpdatedReplicas < replicas || st.ReadyReplicas < replicas:
		n.mark, n.status = markProgress, "Updating"
	default:
		n.mark, n.status = markOK, "Ready"
	}
	if held := set.Annotations[v1alpha1.StatefulSetRevisionAnnotation]; held != "" {
		n.info = append(n.info, "template of revision "+held)
	}
	n.info = append(n.info, fmt.Sprintf("ready %d/%d", st.ReadyReplicas, replicas), fmt.Sprintf("updated %d/%d", st.UpdatedReplicas, replicas))
	if u := set.Spec.UpdateStrategy.RollingUpdate; u != nil && u.Partition != nil && *u.Partition > 0 {
		if *u.Partition >= replicas {
			n.info = append(n.info, "partition held: no pod moves")
		} else {
			n.info = append(n.info, fmt.Sprintf("partition %d", *u.Partition))
		}
	}
	if len(unknown) > 0 {
		n.info = append(n.info, fmt.Sprintf("pods of no known revision: %d", len(unknown)))
	}
	if !metav1.IsControlledBy(set, o.DC) {
		n.mark = markDegraded
		n.info = append(n.info, "not controlled by deploymentconfig/"+o.DC.Name)
	}
	return n
}
