// Package listwatch is the list-then-watch that every wait of Stagehand's is built on: a
// cache.ListerWatcher narrowed to one object by name or to the objects of a label
// selector, made from a typed client's List and Watch, and Until, which lists once, then
// follows the watch until a condition holds (watchtools.UntilWithSync: it lists again
// when a watch expires, and never polls).
//
// A wait reads:
//
//	pods := client.CoreV1().Pods(namespace)
//	lw := listwatch.ByName(name, pods.List, pods.Watch, nil)
//	err := listwatch.Until(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) { ... })
//
// The fake clientsets of unit tests ignore field selectors: a condition that must see only
// the named object checks the object's name too.
//
// It sits at the bottom of the import graph, beside api/, and imports only client-go,
// apimachinery and k8s.io/api: hookpod, strategies and internal/rollout all use it.
package listwatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ListFunc is a typed client's List, as a method value: pods.List.
type ListFunc[L runtime.Object] func(ctx context.Context, opts metav1.ListOptions) (L, error)

// WatchFunc is a typed client's Watch, as a method value: pods.Watch.
type WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

// ByName lists and watches the one object called name (field selector metadata.name)
// through list and watchFn.
//
// client, when not nil, is the client behind list and watchFn. When it says that it cannot
// stream a watch's initial list (IsWatchListSemanticsUnSupported, as the fake clientsets
// do), the ListerWatcher tells the reflector, which then lists and watches instead (see
// cache.ToListWatcherWithWatchListSemantics). With nil the WatchListClient feature gate
// alone decides, as for a client that cannot say.
func ByName[L runtime.Object](name string, list ListFunc[L], watchFn WatchFunc, client any) cache.ListerWatcher {
	return narrowed(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}, list, watchFn, client)
}

// ByLabels lists and watches the objects that selector (a label selector, as text)
// matches, through list and watchFn. client is as for ByName.
func ByLabels[L runtime.Object](selector string, list ListFunc[L], watchFn WatchFunc, client any) cache.ListerWatcher {
	return narrowed(func(o *metav1.ListOptions) { o.LabelSelector = selector }, list, watchFn, client)
}

// narrowed is the ListWatch over list and watchFn whose every request is narrowed by
// narrow.
func narrowed[L runtime.Object](narrow func(*metav1.ListOptions), list ListFunc[L], watchFn WatchFunc, client any) cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			narrow(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			narrow(&o)
			return watchFn(ctx, o)
		},
	}
	if client == nil {
		return lw
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, client)
}

// Until lists through lw, then follows its watch until cond holds for an event
// (watchtools.UntilWithSync). obj is an object of the listed type (&corev1.Pod{}). pre,
// when not nil, first judges the cache that the first list filled: true ends the wait
// before any event.
//
// When ctx ends first, Until returns ctx.Err(), not UntilWithSync's own "timed out
// waiting for the condition". An error of pre or cond is returned as it is.
func Until(ctx context.Context, lw cache.ListerWatcher, obj runtime.Object, pre watchtools.PreconditionFunc, cond watchtools.ConditionFunc) error {
	_, err := watchtools.UntilWithSync(ctx, lw, obj, pre, cond)
	if err != nil && wait.Interrupted(err) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
