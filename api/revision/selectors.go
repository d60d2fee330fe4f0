package revision

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// HookPods selects the hook pods of revision rs at stage (pre, mid, post), or at every
// stage when stage is "".
func HookPods(rs *appsv1.ReplicaSet, stage string) labels.Selector {
	op, values := selection.Exists, []string(nil)
	if stage != "" {
		op, values = selection.Equals, []string{stage}
	}
	hook, _ := labels.NewRequirement(v1alpha1.HookStageLabel, op, values) // a fixed, valid key
	return labels.SelectorFromSet(labels.Set{
		v1alpha1.ConfigLabel:   rs.Labels[v1alpha1.ConfigLabel],
		v1alpha1.RevisionLabel: rs.Labels[v1alpha1.RevisionLabel],
	}).Add(*hook)
}

// DeployerPods selects every deployer pod, of any revision.
func DeployerPods() labels.Selector {
	deployer, _ := labels.NewRequirement(v1alpha1.DeployerPodForLabel, selection.Exists, nil) // a fixed, valid key
	return labels.NewSelector().Add(*deployer)
}

// Owns reports whether obj has an ownerReference to the revision rs (by UID): Stagehand
// acts only on the pods its revisions own, never on a pod that merely has the right name
// or labels.
func Owns(rs *appsv1.ReplicaSet, obj metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == rs.UID && ref.Kind == Kind(rs).Kind {
			return true
		}
	}
	return false
}

// IsDeployerPodOf reports whether pod is the deployer pod of rs: its name, its
// deployer-pod-for label and an ownerReference to rs.
func IsDeployerPodOf(rs *appsv1.ReplicaSet, pod *corev1.Pod) bool {
	return pod.Name == v1alpha1.DeployerPodName(rs.Name) && pod.Labels[v1alpha1.DeployerPodForLabel] == rs.Name && Owns(rs, pod)
}
