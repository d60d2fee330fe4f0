package revision

import (
	appsv1 "k8s.io/api/apps/v1"
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
