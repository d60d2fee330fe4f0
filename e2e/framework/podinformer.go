package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// InformPods runs an informer over the pods of ns that selector selects until the test
// ends, with handlers on its events, and returns its store once it has synced.
func (e *Env) InformPods(t *testing.T, ns, selector string, handlers cache.ResourceEventHandler) cache.Store {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := cache.NewSharedIndexInformer(e.podListWatch(ns, selector, ""), &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := informer.AddEventHandler(handlers); err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("watching pods: the informer never synced")
	}
	return informer.GetStore()
}

// onEveryEvent is a handler that calls f on every add, update and delete.
func onEveryEvent(f func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(any) { f() }, UpdateFunc: func(any, any) { f() }, DeleteFunc: func(any) { f() }}
}
