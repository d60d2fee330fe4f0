package rollout

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// waitPod watches the pod name until done holds for it (nil while it does not exist),
// or ctx ends. It lists once, then follows the watch: no polling.
func (c *Client) waitPod(ctx context.Context, name string, done func(*corev1.Pod) bool) error {
	pods := c.Kube.CoreV1().Pods(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &corev1.Pod{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
		func(obj runtime.Object) bool { p, _ := obj.(*corev1.Pod); return done(p) })
}

// waitReplicaSet watches the ReplicaSet name until done holds for it (nil while it does
// not exist), or ctx ends.
func (c *Client) waitReplicaSet(ctx context.Context, name string, done func(*appsv1.ReplicaSet) bool) error {
	rss := c.Kube.AppsV1().ReplicaSets(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &appsv1.ReplicaSet{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return rss.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return rss.Watch(ctx, o) },
		func(obj runtime.Object) bool { rs, _ := obj.(*appsv1.ReplicaSet); return done(rs) })
}

// waitNamed is the list-then-watch of one object by name (watchtools.UntilWithSync, which
// re-lists when a watch expires). done sees nil once the object is deleted.
func waitNamed(ctx context.Context, namespace, name string, obj runtime.Object,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	done func(runtime.Object) bool) error {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return watchFn(ctx, o)
		},
	}
	// The precondition judges what the first list found, including nothing at all.
	pre := func(store cache.Store) (bool, error) {
		found, exists, err := store.GetByKey(namespace + "/" + name)
		if err != nil || !exists {
			return done(nil), err
		}
		return done(found.(runtime.Object)), nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj, pre, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return done(nil), nil
		}
		return done(ev.Object), nil
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // UntilWithSync reports an interrupted wait in its own words
	}
	return err
}

// WaitExecutionHook watches the ExecutionHook name until done holds for it (nil once it
// is deleted), or ctx ends. It lists once, then follows the watch.
func (c *Client) WaitExecutionHook(ctx context.Context, name string, done func(*v1alpha1.ExecutionHook) bool) error {
	hooks := c.Stagehand.StagehandV1alpha1().ExecutionHooks(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &v1alpha1.ExecutionHook{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return hooks.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return hooks.Watch(ctx, o) },
		func(obj runtime.Object) bool { h, _ := obj.(*v1alpha1.ExecutionHook); return done(h) })
}
