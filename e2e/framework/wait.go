package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// WaitForPods waits, on a watch, until cond holds for the pods in ns that match the label
// selector. On a timeout it fails the test with the pods and the namespace's events.
func (e *Env) WaitForPods(t *testing.T, ns, selector string, timeout time.Duration, what string, cond func([]*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	return e.waitForPodSet(t, ns, e.podListWatch(ns, selector, ""), timeout, what, cond)
}

// WaitForPod waits, on a watch, until cond holds for the named pod (nil once it is gone).
func (e *Env) WaitForPod(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	lw := e.podListWatch(ns, "", fields.OneTermEqualSelector("metadata.name", name).String())
	pods := e.waitForPodSet(t, ns, lw, timeout, what, func(pods []*corev1.Pod) bool {
		if len(pods) == 0 {
			return cond(nil)
		}
		return cond(pods[0])
	})
	if len(pods) == 0 {
		return nil
	}
	return pods[0]
}

// podListWatch lists and watches the pods in ns that match the label and field selectors.
func (e *Env) podListWatch(ns, labelSelector, fieldSelector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = labelSelector, fieldSelector
			return e.Kube.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = labelSelector, fieldSelector
			return e.Kube.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
}

func (e *Env) waitForPodSet(t *testing.T, ns string, lw cache.ListerWatcher, timeout time.Duration, what string, cond func([]*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var store cache.Store
	var last []*corev1.Pod
	check := func() bool {
		last = sortedPods(store.List())
		return cond(last)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{},
		func(s cache.Store) (bool, error) { store = s; return check(), nil },
		func(watch.Event) (bool, error) { return check(), nil })
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (%v)\npods:\n%s\nevents in %s:\n%s",
			timeout, what, err, DescribePods(last), ns, e.DescribeEvents(ns))
	}
	return last
}

func sortedPods(objs []any) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// DescribePods renders pods one per line with their phase, readiness and container states.
func DescribePods(pods []*corev1.Pod) string {
	if len(pods) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "  %s phase=%s ready=%t deleting=%t", p.Name, p.Status.Phase, PodReady(p), p.DeletionTimestamp != nil)
		if p.Status.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", p.Status.Reason)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " [%s: %s]", cs.Name, describeState(cs.State))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated exit=%d reason=%s message=%q", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason
	}
	return "unknown"
}

// DescribeEvents renders the namespace's events, oldest first.
func (e *Env) DescribeEvents(ns string) string {
	list, err := e.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return "  (listing events: " + err.Error() + ")"
	}
	if len(list.Items) == 0 {
		return "  (none)"
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].LastTimestamp.Before(&list.Items[j].LastTimestamp) })
	var b strings.Builder
	for _, ev := range list.Items {
		fmt.Fprintf(&b, "  %s %s/%s %s: %s\n", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
	}
	return b.String()
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodFinished reports whether the pod is Succeeded or Failed.
func PodFinished(p *corev1.Pod) bool {
	return p != nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
}
