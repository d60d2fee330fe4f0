package main

// Helpers of the parts that work on many objects at once (reaction.go, many.go): a
// client without a tight rate limit, throwaway namespaces, a worker pool and a tracker
// that times many objects reaching a state from watch events.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// bulkWorkers is how many creates or updates the bench sends at once.
const bulkWorkers = 50

// bulkClients are clients whose rate limit never paces the bench's own requests (the
// framework's allows 100 per second), so that "at once" means at once.
type bulkClients struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
}

func newBulkClients(env *framework.Env) (*bulkClients, error) {
	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = 5000, 5000
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	sh, err := stagehandclient.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &bulkClients{kube: kube, stagehand: sh}, nil
}

func newNamespace(ctx context.Context, env *framework.Env, prefix string) (string, error) {
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return ns.Name, nil
}

// deleteNamespace deletes ns and waits until it is gone, so that the next part does not
// pay for its garbage collection. Once parent is done (an interrupt), the cluster goes
// away anyway, and nothing is waited for.
func deleteNamespace(parent context.Context, env *framework.Env, ns string) {
	if parent.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), namespaceDeleteLimit)
	defer cancel()
	began := time.Now()
	if err := env.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logf("deleting namespace %s: %v", ns, err)
		return
	}
	for {
		_, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			logf("  namespace %s gone after %s", ns, time.Since(began).Round(time.Second))
			return
		}
		select {
		case <-ctx.Done():
			logf("namespace %s still there after %s", ns, namespaceDeleteLimit)
			return
		case <-time.After(time.Second):
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines and returns the errors joined.
func parallel(n, workers int, f func(i int) error) error {
	next := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// rolloutAll runs create(0..n-1) at once in ns and returns the time from the first create
// to the last revision rev Complete; a failed revision is an error.
func rolloutAll(ctx context.Context, cl *bulkClients, ns string, n int, rev int64, limit time.Duration, create func(i int) error) (float64, error) {
	d, failed, _, err := rolloutAllCounted(ctx, cl, ns, n, rev, limit, create)
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d of %d revisions %d failed", failed, n, rev)
	}
	return d, err
}

// rolloutAllCounted is rolloutAll that counts the failed revisions instead, and gives
// their reasons (tracker.failReasons).
func rolloutAllCounted(ctx context.Context, cl *bulkClients, ns string, n int, rev int64, limit time.Duration, create func(i int) error) (float64, int, []string, error) {
	t, err := trackRevisionsWith(ctx, cl.kube, cl.stagehand, ns, rev, n)
	if err != nil {
		return 0, 0, nil, err
	}
	start := time.Now()
	if err := parallel(n, bulkWorkers, create); err != nil {
		return 0, 0, nil, err
	}
	if err := t.wait(ctx, limit); err != nil {
		return 0, 0, nil, err
	}
	last, _, failed := t.result()
	return sinceMS(start, last), failed, t.failReasons(), nil
}

// tracker times n objects reaching an end state (1: done, 2: failed) from watch events.
type tracker struct {
	mu     sync.Mutex
	n      int
	state  map[string]int
	last   time.Time
	all    chan struct{}
	cancel context.CancelFunc
	errs   []error
	// reasons holds each failed object's status reason and message.
	reasons map[string]string
}

func newTracker(n int) *tracker {
	return &tracker{n: n, state: map[string]int{}, all: make(chan struct{}), reasons: map[string]string{}}
}

// failedBecause records why name failed (the first reason seen wins).
func (t *tracker) failedBecause(name, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.reasons[name]; !ok && reason != "" {
		t.reasons[name] = reason
	}
}

// failReasons counts the failures by status reason, each with one example message,
// most frequent first, as "N× Reason: message".
func (t *tracker) failReasons() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	count, example := map[string]int{}, map[string]string{}
	for name, st := range t.state {
		if st != 2 {
			continue
		}
		reason, msg, _ := strings.Cut(t.reasons[name], "\x00")
		if reason == "" {
			reason = "unknown"
		}
		count[reason]++
		if example[reason] == "" {
			example[reason] = msg
		}
	}
	out := make([]string, 0, len(count))
	for r := range count {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return count[out[i]] > count[out[j]] || count[out[i]] == count[out[j]] && out[i] < out[j]
	})
	for i, r := range out {
		out[i] = fmt.Sprintf("%d× %s: %s", count[r], r, example[r])
	}
	return out
}

// mark records the end state of name, once; the first event to show it wins.
func (t *tracker) mark(name string, st int, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == "" || st == 0 || t.state[name] != 0 {
		return len(t.state) >= t.n
	}
	t.state[name] = st
	if at.After(t.last) {
		t.last = at
	}
	if len(t.state) == t.n {
		close(t.all)
	}
	return len(t.state) >= t.n
}

// watch feeds the tracker from a watch opened at rv; classify names an object's end state.
func (t *tracker) watch(ctx context.Context, rv string, open func(context.Context, metav1.ListOptions) (watch.Interface, error), classify func(obj any) (string, int)) {
	ctx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	prev := t.cancel
	t.cancel = func() {
		if prev != nil {
			prev()
		}
		cancel()
	}
	t.mu.Unlock()
	go func() {
		err := watchUntil(ctx, rv, func(lo metav1.ListOptions) (watch.Interface, error) { return open(ctx, lo) }, func(obj runtime.Object, at time.Time) bool {
			name, st := classify(obj)
			return t.mark(name, st, at)
		})
		if err != nil && ctx.Err() == nil {
			t.mu.Lock()
			t.errs = append(t.errs, err)
			t.mu.Unlock()
		}
	}()
}

// wait waits until every object ended, up to limit, then stops the watches.
func (t *tracker) wait(ctx context.Context, limit time.Duration) error {
	defer func() {
		t.mu.Lock()
		if t.cancel != nil {
			t.cancel()
		}
		t.mu.Unlock()
	}()
	select {
	case <-t.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("only %d of %d ended after %s %v", len(t.state), t.n, limit, errors.Join(t.errs...))
	}
}

// result is the time of the last end, and how many were done and failed.
func (t *tracker) result() (last time.Time, done, failed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.state {
		if st == 1 {
			done++
		} else {
			failed++
		}
	}
	return t.last, done, failed
}

func trackRevisions(ctx context.Context, env *framework.Env, ns string, rev int64, n int) (*tracker, error) {
	return trackRevisionsWith(ctx, env.Kube, env.Stagehand, ns, rev, n)
}

// trackRevisionsWith tracks revision rev of n DCs in ns: done when the DC's status or the
// ReplicaSet's phase annotation says Complete, whichever shows first; failed likewise.
func trackRevisionsWith(ctx context.Context, kube kubernetes.Interface, sh stagehandclient.Interface, ns string, rev int64, n int) (*tracker, error) {
	t := newTracker(n)
	dcs, err := sh.StagehandV1alpha1().DeploymentConfigs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rss, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel})
	if err != nil {
		return nil, err
	}
	classifyDC := func(obj any) (string, int) {
		dc, ok := obj.(*stagehandv1.DeploymentConfig)
		if !ok || dc.Status.LatestVersion != rev {
			return "", 0
		}
		return dc.Name, phaseState(dc.Status.Phase)
	}
	classifyRS := func(obj any) (string, int) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			return "", 0
		}
		name := rs.Labels[stagehandv1.ConfigLabel]
		if n, ok := revision.Number(rs); !ok || n != rev {
			return "", 0
		}
		st := phaseState(revision.Phase(rs))
		if st == 2 {
			reason, msg := revision.StatusReason(rs)
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			t.failedBecause(name, reason+"\x00"+msg)
		}
		return name, st
	}
	now := time.Now()
	for i := range dcs.Items {
		name, st := classifyDC(&dcs.Items[i])
		t.mark(name, st, now)
	}
	for i := range rss.Items {
		name, st := classifyRS(&rss.Items[i])
		t.mark(name, st, now)
	}
	t.watch(ctx, dcs.ResourceVersion, func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
		return sh.StagehandV1alpha1().DeploymentConfigs(ns).Watch(ctx, lo)
	}, classifyDC)
	t.watch(ctx, rss.ResourceVersion, func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
		lo.LabelSelector = stagehandv1.ConfigLabel
		return kube.AppsV1().ReplicaSets(ns).Watch(ctx, lo)
	}, classifyRS)
	return t, nil
}

func phaseState(p stagehandv1.RevisionPhase) int {
	switch p {
	case stagehandv1.RevisionPhaseComplete:
		return 1
	case stagehandv1.RevisionPhaseFailed:
		return 2
	}
	return 0
}
