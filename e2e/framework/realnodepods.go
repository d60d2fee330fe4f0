package framework

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodHistory keeps the last state seen of every pod of a namespace, deleted ones included:
// a hook pod that is gone by the end of a test still shows where its container ran.
type PodHistory struct {
	mu   sync.Mutex
	last map[string]*corev1.Pod // by UID
}

// RecordPodHistory starts a PodHistory of ns; it stops with the test.
func (e *Env) RecordPodHistory(t *testing.T, ns string) *PodHistory {
	t.Helper()
	h := &PodHistory{last: map[string]*corev1.Pod{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := cache.NewSharedIndexInformer(e.podListWatch(ns, "", ""), &corev1.Pod{}, 0, cache.Indexers{})
	keep := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			h.mu.Lock()
			h.last[string(pod.UID)] = pod
			h.mu.Unlock()
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: keep,
		UpdateFunc: func(_, obj any) { keep(obj) }, DeleteFunc: keep}); err != nil {
		t.Fatalf("recording pods: %v", err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("recording pods: the informer never synced")
	}
	return h
}

// Pods returns the last state of every pod seen, by name.
func (h *PodHistory) Pods() []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pods []*corev1.Pod
	for _, p := range h.last {
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// Named returns the pods whose name has prefix.
func (h *PodHistory) Named(prefix string) []*corev1.Pod {
	return slices.DeleteFunc(h.Pods(), func(p *corev1.Pod) bool { return !strings.HasPrefix(p.Name, prefix) })
}

// LogAll logs where every pod seen ran (LogContainers), and fails the test unless each ran
// its containers on the real node, from pulled images.
func (h *PodHistory) LogAll(t *testing.T) {
	t.Helper()
	for _, p := range h.Pods() {
		LogContainers(t, p)
	}
}
