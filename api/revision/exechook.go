package revision

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ExecHookSelector selects the application pods (never hook or deployer pods) of the
// DeploymentConfig of revision rs that pods names: Old (other revisions), New (rs) or All.
// A StatefulSet's pods are told apart by their controller-revision-hash (rs's template
// hash), not by a revision label.
func ExecHookSelector(rs *appsv1.ReplicaSet, pods v1alpha1.ExecHookPods) *metav1.LabelSelector {
	key, value := v1alpha1.RevisionLabel, rs.Labels[v1alpha1.RevisionLabel]
	if OfStatefulSet(rs) {
		key, value = appsv1.ControllerRevisionHashLabelKey, TemplateHash(rs)
	}
	sel := &metav1.LabelSelector{
		MatchLabels: map[string]string{v1alpha1.ConfigLabel: rs.Labels[v1alpha1.ConfigLabel]},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: key, Operator: metav1.LabelSelectorOpExists},
		},
	}
	switch pods {
	case v1alpha1.ExecHookPodsNew:
		sel.MatchLabels[key] = value
	case v1alpha1.ExecHookPodsOld:
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: []string{value}})
	}
	return sel
}

// ExecHookAt is the exec lifecycle hook of spec at stage (pre, mid, post, failed, or step-N of
// rollingParams.steps) of its strategy type, with the API's defaults applied (an exec
// hook without pods gets the pods of its place), or nil.
func ExecHookAt(spec *v1alpha1.DeploymentConfigSpec, stage string) *v1alpha1.ExecHook {
	s := *spec.Strategy.DeepCopy()
	v1alpha1.SetStrategyDefaults(&s)
	var hooks map[string]*v1alpha1.LifecycleHook
	switch s.Type {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		if p := s.RecreateParams; p != nil {
			hooks = map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "mid": p.Mid, "post": p.Post, v1alpha1.FailureHookStage: p.Failed}
		}
	case v1alpha1.DeploymentStrategyTypeRolling:
		if p := s.RollingParams; p != nil {
			hooks = map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "post": p.Post, v1alpha1.FailureHookStage: p.Failed}
			for i, step := range p.Steps {
				hooks[v1alpha1.StepStage(i+1)] = step.Hook
			}
		}
	}
	if h := hooks[stage]; h != nil {
		return h.Exec
	}
	return nil
}
