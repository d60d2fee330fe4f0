package executionhook

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

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
