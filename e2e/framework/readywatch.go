package framework

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ReadySample is what a ReadyTimeline saw after one pod event: when, and how many pods
// of each revision (by its revision label) were ready and not terminating.
type ReadySample struct {
	At    time.Time
	Ready map[string]int
}

// ReadyTimeline records, on a watch, the ready pods of each revision of a DeploymentConfig
// after every pod event, so that a test can say what held during a time window.
type ReadyTimeline struct {
	mu      sync.Mutex
	store   cache.Store
	samples []ReadySample
}

// WatchReady starts a ReadyTimeline for the DeploymentConfig's application pods; it stops
// with the test.
func (e *Env) WatchReady(t *testing.T, ns, dc string) *ReadyTimeline {
	t.Helper()
	w := &ReadyTimeline{}
	selector := stagehandv1.ConfigLabel + "=" + dc + ",!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel
	store := e.InformPods(t, ns, selector, onEveryEvent(w.observe))
	w.mu.Lock()
	w.store = store // events before this are seen by the observe below
	w.mu.Unlock()
	w.observe()
	return w
}

func (w *ReadyTimeline) observe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store == nil {
		return // still syncing
	}
	ready := map[string]int{}
	for _, obj := range w.store.List() {
		pod := obj.(*corev1.Pod)
		if pod.DeletionTimestamp == nil && PodReady(pod) {
			ready[pod.Labels[stagehandv1.RevisionLabel]]++
		}
	}
	w.samples = append(w.samples, ReadySample{At: time.Now(), Ready: ready})
}

// Between is the samples that held at some moment in [from, to]: the last one before from
// (it still held at from) and every one up to to.
func (w *ReadyTimeline) Between(from, to time.Time) []ReadySample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ReadySample
	for i, s := range w.samples {
		next := len(w.samples) > i+1 && !w.samples[i+1].At.After(from)
		if !s.At.After(to) && !next {
			out = append(out, s)
		}
	}
	return out
}

// MinTotal is the fewest ready pods, over all revisions, of any sample.
func (w *ReadyTimeline) MinTotal() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	least := -1
	for _, s := range w.samples {
		total := 0
		for _, n := range s.Ready {
			total += n
		}
		if least < 0 || total < least {
			least = total
		}
	}
	return least
}
