package testutil

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodRecorder watches the pods of a namespace and calls observe with all of them after
// every change, so that a test can check an invariant at every moment of a rollout.
type PodRecorder struct {
	mu      sync.Mutex
	lister  cache.Store
	observe func(pods []*corev1.Pod)
}

// RecordPods starts a PodRecorder on namespace; it stops when the test ends.
func RecordPods(t *testing.T, client kubernetes.Interface, namespace string, observe func(pods []*corev1.Pod)) *PodRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	informer := factory.Core().V1().Pods().Informer()
	r := &PodRecorder{lister: informer.GetStore(), observe: observe}
	handle := func(any) { r.record() }
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handle, UpdateFunc: func(_, obj any) { r.record() }, DeleteFunc: handle,
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced), "pod watch of %s", namespace)
	return r
}

func (r *PodRecorder) record() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pods []*corev1.Pod
	for _, obj := range r.lister.List() {
		pods = append(pods, obj.(*corev1.Pod))
	}
	r.observe(pods)
}

// Ready reports whether pod is Ready and not terminating: available, with minReadySeconds 0.
func Ready(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
