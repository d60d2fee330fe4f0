package strategies

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

// PodTracker keeps a watch-fed cache of the pods that match one label selector (usually
// every pod of one DeploymentConfig) and wakes waiters on every change. Waits evaluate
// their condition over the cache on each change, never on a fixed polling interval.
type PodTracker struct {
	store   cache.Store
	changed chan struct{}
}

// StartPodTracker starts the watch and returns once the cache holds the current pods.
// The watch stops when ctx is done.
func StartPodTracker(ctx context.Context, pods Pods, selector string) (*PodTracker, error) {
	t := &PodTracker{changed: make(chan struct{}, 1)}
	notify := func(any) { t.notify() }
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		// pods tells whether its client can stream the initial list (WatchList); the fake
		// clientset cannot.
		ListerWatcher: listwatch.ByLabels(selector, pods.ListPods, pods.WatchPods, pods),
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    notify,
			UpdateFunc: func(_, obj any) { t.notify() },
			DeleteFunc: notify,
		},
	})
	t.store = store
	go controller.RunWithContext(ctx)
	// WaitFor wakes up when the initial list is in the cache; WaitForCacheSync would poll
	// every 100 ms, and every rollout step that starts a watch would pay for it.
	if !cache.WaitFor(ctx, "", controller.HasSyncedChecker()) {
		return nil, cancelled(ctx, fmt.Errorf("watching pods %s: %w", selector, ctx.Err()))
	}
	return t, nil
}

func (t *PodTracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Changed is signalled (without blocking, coalesced) after every pod event.
func (t *PodTracker) Changed() <-chan struct{} { return t.changed }

// PodsOf returns the cached pods that rs selects. A nil rs has no pods.
func (t *PodTracker) PodsOf(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	if rs == nil {
		return nil, nil
	}
	return t.PodsSelectedBy("ReplicaSet "+rs.Name, rs.Spec.Selector)
}

// PodsSelectedBy returns the cached pods that selector selects; owner names the object
// whose selector it is, for the error about an invalid one.
func (t *PodTracker) PodsSelectedBy(owner string, ls *metav1.LabelSelector) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, Invalidf("%s has an invalid selector: %v", owner, err)
	}
	var pods []*corev1.Pod
	for _, obj := range t.store.List() {
		pod := obj.(*corev1.Pod)
		if selector.Matches(labels.Set(pod.Labels)) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// Count counts the pods of rs at now.
func (t *PodTracker) Count(rs *appsv1.ReplicaSet, minReadySeconds int32, now time.Time) (PodCounts, error) {
	pods, err := t.PodsOf(rs)
	if err != nil {
		return PodCounts{}, err
	}
	return CountPods(pods, minReadySeconds, now), nil
}

// Condition is evaluated on every pod change. It returns whether the wait is over, how
// long until it should be evaluated again without a change (0: only on a change), and a
// description of what it saw, for the timeout message.
type Condition func(now time.Time) (done bool, recheck time.Duration, seen string, err error)

// Wait describes one wait on the pods of a revision.
type Wait struct {
	// Revision and WaitingFor name the wait in the timeout message.
	Revision   string
	WaitingFor string
	// Selector selects the revision's pods, for the hint in the timeout message.
	Selector string
	// Timeout bounds the wait; 0 waits until ctx is done.
	Timeout time.Duration
}

// Until blocks until cond holds, re-evaluating it on every pod change and when it asks
// to. It returns a *TimeoutError after w.Timeout, and ErrCancelled when ctx is done.
func (t *PodTracker) Until(ctx context.Context, w Wait, cond Condition) error {
	var deadline <-chan time.Time
	if w.Timeout > 0 {
		timer := time.NewTimer(w.Timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		done, recheck, seen, err := cond(time.Now())
		if err != nil || done {
			return err
		}
		if err := t.next(ctx, w, deadline, recheck, seen); err != nil {
			return err
		}
	}
}

// next blocks until a pod changes, recheck passes (when > 0), the deadline passes or ctx
// is done.
func (t *PodTracker) next(ctx context.Context, w Wait, deadline <-chan time.Time, recheck time.Duration, seen string) error {
	var again <-chan time.Time
	if recheck > 0 {
		timer := time.NewTimer(recheck)
		defer timer.Stop()
		again = timer.C
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s of %s: %w: %w", w.WaitingFor, w.Revision, ErrCancelled, ctx.Err())
	case <-deadline:
		return &TimeoutError{Revision: w.Revision, WaitingFor: w.WaitingFor, Seen: seen, Selector: w.Selector, Timeout: w.Timeout}
	case <-t.changed:
	case <-again:
	}
	return nil
}

// SelectorString renders the selector of rs for messages, or "" when it is invalid.
func SelectorString(rs *appsv1.ReplicaSet) string {
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return ""
	}
	return selector.String()
}
