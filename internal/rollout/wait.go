package rollout

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// waitPod watches the pod name until done holds for it (nil while it does not exist),
// or ctx ends. It lists once, then follows the watch: no polling.
func (c *Client) waitPod(ctx context.Context, name string, done func(*corev1.Pod) bool) error {
	pods := c.Kube.CoreV1().Pods(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &corev1.Pod{}, listwatch.ByName(name, pods.List, pods.Watch, nil),
		func(obj runtime.Object) bool { p, _ := obj.(*corev1.Pod); return done(p) })
}

// waitReplicaSet watches revision name until done holds for it (nil while it does not
// exist), or ctx ends: its ReplicaSet, or the ControllerRevision of a StatefulSet
// revision, which done sees as its ReplicaSet view. One read finds which. The watches
// are told the client, so that a fake clientset of a test lists and watches.
func (c *Client) waitReplicaSet(ctx context.Context, name string, done func(*appsv1.ReplicaSet) bool) error {
	if rs, err := (revisions.Client{Kube: c.Kube}).GetAny(ctx, c.Namespace, name); err == nil && revision.OfStatefulSet(rs) {
		return c.waitStatefulRevision(ctx, name, done)
	}
	rss := c.Kube.AppsV1().ReplicaSets(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &appsv1.ReplicaSet{}, listwatch.ByName(name, rss.List, rss.Watch, c.Kube),
		func(obj runtime.Object) bool { rs, _ := obj.(*appsv1.ReplicaSet); return done(rs) })
}

// waitStatefulRevision watches the ControllerRevision of StatefulSet revision name until
// done holds for its view. A record whose data cannot be read is seen with its metadata
// alone: its phase is an annotation.
func (c *Client) waitStatefulRevision(ctx context.Context, name string, done func(*appsv1.ReplicaSet) bool) error {
	crs := c.Kube.AppsV1().ControllerRevisions(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &appsv1.ControllerRevision{}, listwatch.ByName(name, crs.List, crs.Watch, c.Kube),
		func(obj runtime.Object) bool {
			cr, _ := obj.(*appsv1.ControllerRevision)
			if cr == nil {
				return done(nil)
			}
			view, err := revision.FromControllerRevision(cr)
			if err != nil {
				view = &appsv1.ReplicaSet{ObjectMeta: cr.ObjectMeta}
			}
			return done(view)
		})
}

// waitNamed follows lw, the list-then-watch of the one object name, until done holds for
// it. done sees nil while the object does not exist and once it is deleted.
func waitNamed(ctx context.Context, namespace, name string, obj runtime.Object, lw cache.ListerWatcher,
	done func(runtime.Object) bool) error {
	// The precondition judges what the first list found, including nothing at all.
	pre := func(store cache.Store) (bool, error) {
		found, exists, err := store.GetByKey(namespace + "/" + name)
		if err != nil || !exists {
			return done(nil), err
		}
		return done(found.(runtime.Object)), nil
	}
	return listwatch.Until(ctx, lw, obj, pre, func(ev watch.Event) (bool, error) {
		if m, err := meta.Accessor(ev.Object); err == nil && m.GetName() != name {
			return false, nil // another object: a fake clientset ignores the field selector
		}
		if ev.Type == watch.Deleted {
			return done(nil), nil
		}
		return done(ev.Object), nil
	})
}

// WaitExecutionHook watches the ExecutionHook name until done holds for it (nil once it
// is deleted), or ctx ends. It lists once, then follows the watch.
func (c *Client) WaitExecutionHook(ctx context.Context, name string, done func(*v1alpha1.ExecutionHook) bool) error {
	hooks := c.Stagehand.StagehandV1alpha1().ExecutionHooks(c.Namespace)
	return waitNamed(ctx, c.Namespace, name, &v1alpha1.ExecutionHook{}, listwatch.ByName(name, hooks.List, hooks.Watch, nil),
		func(obj runtime.Object) bool { h, _ := obj.(*v1alpha1.ExecutionHook); return done(h) })
}
