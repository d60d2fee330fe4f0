package framework

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// HookStart is what the cluster looked like when a hook pod first appeared.
type HookStart struct {
	Pod      *corev1.Pod    // the hook pod as first seen
	Stage    string         // pre, mid or post
	Revision string         // the revision number the hook belongs to
	Pods     map[string]int // running application pods per revision number, terminating ones included
	Ready    map[string]int // ready, non-terminating application pods per revision number
}

// HookWatcher records every hook pod of a DeploymentConfig, in the order they appeared,
// with the application pods that existed at that moment.
type HookWatcher struct {
	mu     sync.Mutex
	store  cache.Store
	starts []HookStart
	seen   map[string]bool
}

// WatchHooks starts a HookWatcher for the DeploymentConfig; it stops with the test.
func (e *Env) WatchHooks(t *testing.T, ns, dc string) *HookWatcher {
	t.Helper()
	w := &HookWatcher{seen: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := cache.NewSharedIndexInformer(e.podListWatch(ns, stagehandv1.ConfigLabel+"="+dc, ""), &corev1.Pod{}, 0, cache.Indexers{})
	w.store = informer.GetStore()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.added}); err != nil {
		t.Fatalf("watching hooks: %v", err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("watching hooks: the informer never synced")
	}
	return w
}

func (w *HookWatcher) added(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Labels[stagehandv1.HookStageLabel] == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[string(pod.UID)] {
		return
	}
	w.seen[string(pod.UID)] = true
	start := HookStart{Pod: pod.DeepCopy(), Stage: pod.Labels[stagehandv1.HookStageLabel],
		Revision: pod.Labels[stagehandv1.RevisionLabel], Pods: map[string]int{}, Ready: map[string]int{}}
	for _, o := range w.store.List() {
		p := o.(*corev1.Pod)
		// A finished pod no longer runs (Recreate goes on once the old pods have stopped,
		// as the Deployment controller does); its object may stay a moment longer.
		if p.Labels[stagehandv1.HookStageLabel] != "" || p.Labels[stagehandv1.DeployerPodForLabel] != "" || PodFinished(p) {
			continue
		}
		rev := p.Labels[stagehandv1.RevisionLabel]
		start.Pods[rev]++
		if p.DeletionTimestamp == nil && PodReady(p) {
			start.Ready[rev]++
		}
	}
	w.starts = append(w.starts, start)
}

// Starts returns the hook pods seen so far, in the order they appeared.
func (w *HookWatcher) Starts() []HookStart {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]HookStart(nil), w.starts...)
}

// Stages returns the stages of the hook pods seen so far, in order (one entry per pod, so
// a retried hook appears once per attempt).
func (w *HookWatcher) Stages() []string {
	var stages []string
	for _, s := range w.Starts() {
		stages = append(stages, s.Stage)
	}
	return stages
}
