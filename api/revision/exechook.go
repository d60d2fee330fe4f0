package revision

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ExecHookSelector selects the application pods (never hook or deployer pods) of the
// DeploymentConfig of revision rs that pods names: Old (other revisions), New (rs) or All.
func ExecHookSelector(rs *appsv1.ReplicaSet, pods v1alpha1.ExecHookPods) *metav1.LabelSelector {
	if OfStatefulSet(rs) {
		return statefulExecHookSelector(rs, pods)
	}
	sel := &metav1.LabelSelector{
		MatchLabels: map[string]string{v1alpha1.ConfigLabel: rs.Labels[v1alpha1.ConfigLabel]},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: v1alpha1.RevisionLabel, Operator: metav1.LabelSelectorOpExists},
		},
	}
	switch pods {
	case v1alpha1.ExecHookPodsNew:
		sel.MatchLabels[v1alpha1.RevisionLabel] = rs.Labels[v1alpha1.RevisionLabel]
	case v1alpha1.ExecHookPodsOld:
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: v1alpha1.RevisionLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{rs.Labels[v1alpha1.RevisionLabel]}})
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

// statefulExecHookSelector is ExecHookSelector for a StatefulSet revision, whose pods are
// told apart by their controller-revision-hash, not by a revision label: New are the pods
// of rs's template hash, Old every other pod of the StatefulSet.
func statefulExecHookSelector(rs *appsv1.ReplicaSet, pods v1alpha1.ExecHookPods) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{
		MatchLabels: map[string]string{v1alpha1.ConfigLabel: rs.Labels[v1alpha1.ConfigLabel]},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpExists},
		},
	}
	switch pods {
	case v1alpha1.ExecHookPodsNew:
		sel.MatchLabels[appsv1.ControllerRevisionHashLabelKey] = TemplateHash(rs)
	case v1alpha1.ExecHookPodsOld:
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{TemplateHash(rs)}})
	}
	return sel
}
