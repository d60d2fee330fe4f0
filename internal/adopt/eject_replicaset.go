package adopt

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// podTemplateHash is a stable pod-template-hash for the Deployment's template. The
// Deployment controller finds its ReplicaSet by template, ignoring this label, so the value
// needs only to be stable (a rerun computes the same) and a valid label value.
func podTemplateHash(template *corev1.PodTemplateSpec) string {
	raw, _ := json.Marshal(template)
	h := fnv.New32a()
	_, _ = h.Write(raw)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// replicaSetFor creates the Deployment's ReplicaSet, <name>-<hash>, with the Deployment's
// template and replicas and the pod-template-hash label that the relabelled pods carry: it
// counts them as its own and creates none, and the Deployment controller adopts it by its
// labels (as it would any ReplicaSet its selector matches). It waits until the Deployment
// owns it, with every pod ready.
func (a *Adopter) replicaSetFor(ctx context.Context, d *appsv1.Deployment, hash string) error {
	rss := a.Kube.AppsV1().ReplicaSets(a.Namespace)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: copyMap(d.Spec.Template.Labels)},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, MinReadySeconds: d.Spec.MinReadySeconds,
			Selector: d.Spec.Selector.DeepCopy(), Template: *d.Spec.Template.DeepCopy()},
	}
	rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs.Spec.Selector.MatchLabels = copyMap(rs.Spec.Selector.MatchLabels)
	if rs.Spec.Selector.MatchLabels == nil {
		rs.Spec.Selector.MatchLabels = map[string]string{}
	}
	rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs.Spec.Template.Labels = copyMap(rs.Spec.Template.Labels)
	rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	if _, err := rss.Create(ctx, rs, metav1.CreateOptions{}); err == nil {
		a.Progress("created replicaset/%s for deployment/%s; it counts the pods as its own", rs.Name, d.Name)
	} else if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating replicaset %s for deployment %s: %w", rs.Name, d.Name, err)
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	return a.waitFor(ctx, "deployment/"+d.Name+" to own replicaset/"+rs.Name+" with its pods ready", func(ctx context.Context) (bool, error) {
		live, err := rss.Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		ref := metav1.GetControllerOfNoCopy(live)
		if ref != nil && ref.UID != d.UID {
			return false, refusedf("replicaset %s belongs to %s %s, not to deployment %s; delete it and eject again", rs.Name, ref.Kind, ref.Name, d.Name)
		}
		return ref != nil && live.Status.ObservedGeneration >= live.Generation &&
			live.Status.Replicas == want && live.Status.ReadyReplicas == want, nil
	})
}
