package deferpolicy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	lifecycleinformers "k8s.io/client-go/informers/lifecycle/v1alpha1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// The responder's heartbeat interval: the API asks for no more than one every 20 s, and
// interrupts a responder silent for 20 minutes.
const (
	DefaultEvictionHeartbeat = time.Minute
	MinEvictionHeartbeat     = 20 * time.Second
)

func heartbeatOf(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultEvictionHeartbeat
	case d < MinEvictionHeartbeat:
		return MinEvictionHeartbeat
	}
	return d
}

// WithEvictions makes the controller an eviction responder (BeforeEviction) over the
// EvictionRequests and Evictions of lifecycle.k8s.io/v1alpha1. The manager calls it only
// where the apiserver serves them; without it a BeforeEviction policy is not Ready.
func (c *Controller) WithEvictions(requests lifecycleinformers.EvictionRequestInformer, evictions lifecycleinformers.EvictionInformer) error {
	c.requests, c.evictions = requests.Lister(), evictions.Lister()
	c.loop.Synced = append(c.loop.Synced, requests.Informer().HasSynced, evictions.Informer().HasSynced)
	return plumbing.AddHandlers(
		plumbing.Handler{Informer: requests.Informer(), Handler: onTarget(func(obj any) *lifecyclev1alpha1.EvictionRequestPodReference {
			if r, ok := obj.(*lifecyclev1alpha1.EvictionRequest); ok {
				return r.Spec.Target.Pod
			}
			return nil
		}, c)},
		plumbing.Handler{Informer: evictions.Informer(), Handler: onTarget(func(obj any) *lifecyclev1alpha1.EvictionRequestPodReference {
			if e, ok := obj.(*lifecyclev1alpha1.Eviction); ok && e.Spec.Target.Pod != nil {
				return &lifecyclev1alpha1.EvictionRequestPodReference{Name: e.Spec.Target.Pod.Name, UID: e.Spec.Target.Pod.UID}
			}
			return nil
		}, c)},
	)
}

// onTarget enqueues the pod that an EvictionRequest or an Eviction targets, on any
// change: its eviction, and its run.
func onTarget(target func(any) *lifecyclev1alpha1.EvictionRequestPodReference, c *Controller) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		obj = plumbing.UnwrapTombstone(obj)
		if t := target(obj); t != nil {
			if o, ok := obj.(interface{ GetNamespace() string }); ok {
				c.add(kindEvict, o.GetNamespace(), t.Name)
				c.add(kindPod, o.GetNamespace(), t.Name) // a run whose Eviction ended stops
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue}
}

// evictionPodChanged enqueues the eviction of a pod that names Stagehand as a responder,
// on each of its changes: its steps' progress is the responder's message.
func (c *Controller) evictionPodChanged(pod *corev1.Pod) {
	if c.evictions != nil && v1alpha1.HasEvictionResponder(pod) {
		c.add(kindEvict, pod.Namespace, pod.Name)
	}
}
