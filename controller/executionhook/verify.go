package executionhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// verifyExecHook checks a hook that claims to be an exec lifecycle hook of revision rev
// (label stagehand.dev/exec-hook-of). The run-code policy lets the deployer create such
// hooks without create pods/exec, because the DeploymentConfig's author was checked for
// it when the exec hook entered the DC. So the hook runs only when it is exactly the exec
// hook of the revision's config snapshot at its stage: the same command, timeout,
// container and pods, and owned by the revision. Anything else fails as Forbidden.
func (c *Controller) verifyExecHook(ctx context.Context, hook *v1alpha1.ExecutionHook, action *v1alpha1.HookAction, rev string) (*v1alpha1.HookError, error) {
	refuse := func(why string) *v1alpha1.HookError {
		return hookError(v1alpha1.HookErrorForbidden, "NotTheRevisionsExecHook", fmt.Sprintf(
			"ExecutionHook %s is labelled %s=%s but %s; it was not run", hook.Name, v1alpha1.ExecHookOfLabel, rev, why))
	}
	var owner *metav1.OwnerReference
	for i, ref := range hook.OwnerReferences {
		// A ReplicaSet revision, or the ControllerRevision of a StatefulSet revision.
		if (ref.Kind == revision.ReplicaSetKind.Kind || ref.Kind == revision.ControllerRevisionKind.Kind) && ref.Name == rev {
			owner = &hook.OwnerReferences[i]
		}
	}
	if owner == nil {
		return refuse("has no ownerReference to the revision " + rev), nil
	}
	rs, err := revisions.Client{Kube: c.kube}.Get(ctx, hook.Namespace, rev, owner.Kind == revision.ControllerRevisionKind.Kind)
	if apierrors.IsNotFound(err) {
		return refuse("the revision does not exist"), nil
	}
	if err != nil {
		return nil, err
	}
	if rs.UID != owner.UID || rs.Labels[v1alpha1.ConfigLabel] == "" {
		return refuse("its owner is not that revision"), nil
	}
	spec, err := revision.Snapshot(rs)
	if err != nil {
		return refuse(err.Error()), nil
	}
	stage := hook.Labels[v1alpha1.HookStageLabel]
	want := revision.ExecHookAt(spec, stage)
	if want == nil {
		return refuse(fmt.Sprintf("the revision's config has no exec hook at stage %q", stage)), nil
	}
	sel := hook.Spec.PodSelection
	switch {
	case !equality.Semantic.DeepEqual(action.Action.Exec.Command, want.Command):
		return refuse("its HookAction's command is not the revision's exec hook's"), nil
	case timeoutOf(action.ActionTimeoutSeconds) != timeoutOf(want.TimeoutSeconds):
		return refuse("its HookAction's timeout is not the revision's exec hook's"), nil
	case sel.PodContainerSelector == nil || len(sel.PodContainerNamesList) > 0 ||
		!equality.Semantic.DeepEqual(sel.PodContainerSelector.ContainerList, []string{want.ContainerName}) ||
		!equality.Semantic.DeepEqual(sel.PodContainerSelector.PodSelector, revision.ExecHookSelector(rs, want.Pods)):
		return refuse("it selects other pods or containers than the revision's exec hook"), nil
	}
	return nil, nil
}

func timeoutOf(t *int64) int64 {
	if t == nil {
		return v1alpha1.DefaultActionTimeoutSeconds
	}
	return *t
}
