package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// WaitForRevision waits, on a watch, until cond holds for revision n of a DeploymentConfig
// (its ReplicaSet's annotations and spec.replicas). A timeout fails the test with every
// revision, the pods, the events and the controller's log.
func (e *Env) WaitForRevision(t *testing.T, ns, dc string, n int64, timeout time.Duration, what string, cond func(annotations map[string]string, replicas int32) bool) *appsv1.ReplicaSet {
	t.Helper()
	name := stagehandv1.RevisionName(dc, n)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	selector := stagehandv1.ConfigLabel + "=" + dc
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return e.Kube.AppsV1().ReplicaSets(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return e.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		},
	}
	var store cache.Store
	check := func() (bool, error) {
		obj, ok, _ := store.GetByKey(ns + "/" + name)
		if !ok {
			return false, nil
		}
		rs := obj.(*appsv1.ReplicaSet)
		replicas := int32(1)
		if rs.Spec.Replicas != nil {
			replicas = *rs.Spec.Replicas
		}
		return cond(rs.Annotations, replicas), nil
	}
	ev, err := watchtools.UntilWithSync(ctx, lw, &appsv1.ReplicaSet{},
		func(s cache.Store) (bool, error) { store = s; return check() },
		func(watch.Event) (bool, error) { return check() })
	if err != nil {
		t.Fatalf("timed out after %s waiting for revision %s to have %s (%v)\n%s", timeout, name, what, err, e.Describe(ns, dc))
	}
	if ev != nil {
		if rs, ok := ev.Object.(*appsv1.ReplicaSet); ok && rs.Name == name {
			return rs
		}
	}
	obj, _, _ := store.GetByKey(ns + "/" + name)
	rs, _ := obj.(*appsv1.ReplicaSet)
	return rs
}

// WaitForDeploymentConfig waits, on a watch, until cond holds for the DeploymentConfig.
func (e *Env) WaitForDeploymentConfig(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*stagehandv1.DeploymentConfig) bool) *stagehandv1.DeploymentConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	client := e.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.Watch(ctx, o)
		},
	}
	var last *stagehandv1.DeploymentConfig
	check := func(obj runtime.Object) bool {
		dc, ok := obj.(*stagehandv1.DeploymentConfig)
		if !ok {
			return false
		}
		last = dc
		return cond(dc)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &stagehandv1.DeploymentConfig{},
		func(s cache.Store) (bool, error) {
			if obj, ok, _ := s.GetByKey(ns + "/" + name); ok {
				return check(obj.(runtime.Object)), nil
			}
			return false, nil
		},
		func(ev watch.Event) (bool, error) { return check(ev.Object), nil })
	if err != nil {
		t.Fatalf("timed out after %s waiting for DeploymentConfig %s to have %s (%v)\nlast seen status: %+v\n%s", timeout, name, what, err, statusOf(last), e.Describe(ns, name))
	}
	return last
}

func statusOf(dc *stagehandv1.DeploymentConfig) any {
	if dc == nil {
		return nil
	}
	return dc.Status
}

// Describe renders what a failed wait needs: the revisions with their annotations, the
// pods, the namespace's events and the end of the controller's log.
func (e *Env) Describe(ns, dc string) string {
	var b strings.Builder
	rss, err := e.Kube.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=" + dc})
	b.WriteString("revisions:\n")
	if err != nil {
		fmt.Fprintf(&b, "  (listing: %v)\n", err)
	} else {
		for _, rs := range rss.Items {
			replicas := int32(-1)
			if rs.Spec.Replicas != nil {
				replicas = *rs.Spec.Replicas
			}
			fmt.Fprintf(&b, "  %s replicas=%d ready=%d phase=%s reason=%q cancelled=%s\n", rs.Name, replicas, rs.Status.ReadyReplicas,
				rs.Annotations[stagehandv1.PhaseAnnotation], rs.Annotations[stagehandv1.StatusReasonAnnotation], rs.Annotations[stagehandv1.CancelledAnnotation])
		}
	}
	pods, err := e.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	b.WriteString("pods:\n")
	if err == nil {
		ptrs := make([]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			ptrs[i] = &pods.Items[i]
		}
		b.WriteString(DescribePods(ptrs))
	}
	fmt.Fprintf(&b, "events:\n%s", e.DescribeEvents(ns))
	logs := e.ControllerLogs()
	if lines := strings.Split(logs, "\n"); len(lines) > 40 {
		logs = strings.Join(lines[len(lines)-40:], "\n")
	}
	fmt.Fprintf(&b, "controller log (end):\n%s", logs)
	return b.String()
}

// PodRecorder counts, by name, the pods created in a namespace with a label, for the
// whole test: a pod deleted and created again counts twice.
type PodRecorder struct {
	mu       sync.Mutex
	uids     map[string]map[string]bool
	alive    map[string]bool
	maxAlive int
}

// RecordPods starts recording the pods in ns that carry the label key, until the test ends.
func (e *Env) RecordPods(t *testing.T, ns, labelKey string) *PodRecorder {
	t.Helper()
	r := &PodRecorder{uids: map[string]map[string]bool{}, alive: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := cache.NewSharedIndexInformer(e.podListWatch(ns, labelKey, ""), &corev1.Pod{}, 0, cache.Indexers{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				r.add(pod)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && PodFinished(pod) {
				r.remove(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				r.remove(pod)
			}
		},
	})
	if err != nil {
		t.Fatalf("recording pods: %v", err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("recording pods: the informer never synced")
	}
	return r
}

func (r *PodRecorder) add(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.uids[pod.Name] == nil {
		r.uids[pod.Name] = map[string]bool{}
	}
	r.uids[pod.Name][string(pod.UID)] = true
	if PodFinished(pod) {
		return
	}
	r.alive[string(pod.UID)] = true
	if len(r.alive) > r.maxAlive {
		r.maxAlive = len(r.alive)
	}
}

func (r *PodRecorder) remove(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.alive, string(pod.UID))
}

// MaxAlive is the most recorded pods that were active (existing and not finished) at the
// same moment. Finished deployer pods are kept for their logs, so they do not count.
func (r *PodRecorder) MaxAlive() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxAlive
}

// Created returns how many distinct pods were seen under each name.
func (r *PodRecorder) Created() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.uids))
	for name, uids := range r.uids {
		out[name] = len(uids)
	}
	return out
}

// Names returns the recorded pod names, sorted.
func (r *PodRecorder) Names() []string {
	created := r.Created()
	names := make([]string, 0, len(created))
	for n := range created {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
