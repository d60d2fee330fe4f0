package executionhook

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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
		if ref.Kind == "ReplicaSet" && ref.Name == rev {
			owner = &hook.OwnerReferences[i]
		}
	}
	if owner == nil {
		return refuse("has no ownerReference to the ReplicaSet " + rev), nil
	}
	rs, err := c.kube.AppsV1().ReplicaSets(hook.Namespace).Get(ctx, rev, metav1.GetOptions{})
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

// selectContainers lists the pod × container entries of the hook, in a stable order. A
// selector leaves out the pods that are terminating or finished (podEnded). A named pod
// that does not exist, is terminating or has finished, or a named container it lacks, is
// an entry that fails at once; a selector that matches nothing fails the hook.
func (c *Controller) selectContainers(ctx context.Context, hook *v1alpha1.ExecutionHook) ([]v1alpha1.ContainerExecutionHookStatus, *v1alpha1.HookError, error) {
	sel := hook.Spec.PodSelection
	var entries []v1alpha1.ContainerExecutionHookStatus
	add := func(pod, container string, herr *v1alpha1.HookError) {
		e := v1alpha1.ContainerExecutionHookStatus{PodName: pod, ContainerName: container, Error: herr}
		if herr != nil {
			e.Succeed, e.CompletionTime = ptrTo(false), now()
		}
		entries = append(entries, e)
	}
	pods := c.kube.CoreV1().Pods(hook.Namespace)
	switch {
	case sel.PodContainerSelector != nil:
		selector, err := metav1.LabelSelectorAsSelector(sel.PodContainerSelector.PodSelector)
		if err != nil {
			return nil, hookError(v1alpha1.HookErrorError, "InvalidSelector", "spec.podSelection.podContainerSelector.podSelector: "+err.Error()), nil
		}
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, nil, err
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		for i := range list.Items {
			pod := &list.Items[i]
			if podEnded(pod) != nil {
				continue
			}
			addContainers(pod, sel.PodContainerSelector.ContainerList, add)
		}
		if len(entries) == 0 {
			return nil, hookError(v1alpha1.HookErrorNoPods, "NoPodsSelected", fmt.Sprintf(
				"spec.podSelection.podContainerSelector selects no running pod (or none of the listed containers) in namespace %s",
				hook.Namespace)), nil
		}
	default:
		for _, pc := range sel.PodContainerNamesList {
			pod, err := pods.Get(ctx, pc.PodName, metav1.GetOptions{})
			var gone *v1alpha1.HookError
			switch {
			case apierrors.IsNotFound(err):
				gone = hookError(v1alpha1.HookErrorPodGone, "PodNotFound", fmt.Sprintf("pod %s does not exist", pc.PodName))
			case err != nil:
				return nil, nil, err
			default:
				gone = podEnded(pod)
			}
			if gone == nil {
				addContainers(pod, pc.ContainerNames, add)
				continue
			}
			// A named pod that is gone, terminating or finished: its entries fail at once.
			names := pc.ContainerNames
			if len(names) == 0 && pod != nil {
				for _, ctr := range pod.Spec.Containers {
					names = append(names, ctr.Name)
				}
			}
			if len(names) == 0 {
				names = []string{""}
			}
			for _, n := range names {
				add(pc.PodName, n, gone)
			}
		}
	}
	if len(entries) > MaxContainers {
		return nil, hookError(v1alpha1.HookErrorError, "TooManyContainers", fmt.Sprintf(
			"spec.podSelection selects %d containers, more than %d: split the hook", len(entries), MaxContainers)), nil
	}
	return entries, nil, nil
}

// addContainers adds the named containers of pod (every container when names is empty);
// a name the pod lacks is an entry that has failed.
func addContainers(pod *corev1.Pod, names []string, add func(pod, container string, herr *v1alpha1.HookError)) {
	if len(names) == 0 {
		for _, ctr := range pod.Spec.Containers {
			add(pod.Name, ctr.Name, nil)
		}
		return
	}
	for _, n := range names {
		found := false
		for _, ctr := range pod.Spec.Containers {
			found = found || ctr.Name == n
		}
		if found {
			add(pod.Name, n, nil)
		} else {
			add(pod.Name, n, hookError(v1alpha1.HookErrorContainerNotFound, "ContainerNotFound",
				fmt.Sprintf("pod %s has no container %s", pod.Name, n)))
		}
	}
}
