package framework

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// PodSetWatcher follows the application pods of a DeploymentConfig on a watch and keeps,
// over every event it sees, the fewest available pods and whether pods of two revisions
// ever ran at once. Available means Ready and not terminating, as the ReplicaSet
// controller counts it (minReadySeconds 0). A pod runs until its phase is Succeeded or
// Failed, which the node sets once a deleted pod's containers have stopped; its object
// may stay a moment longer, as the Deployment controller's Recreate also allows.
type PodSetWatcher struct {
	mu             sync.Mutex
	store          cache.Store
	minAvailable   int
	maxRevisions   int
	events         int
	lastAvailable  int
	lastRevisions  map[string]int
	mixedSnapshots []map[string]int
}

// WatchPods starts a PodSetWatcher for the DeploymentConfig's pods; it stops with the test.
func (e *Env) WatchPods(t *testing.T, ns, dc string) *PodSetWatcher {
	t.Helper()
	w := &PodSetWatcher{minAvailable: -1}
	selector := stagehandv1.ConfigLabel + "=" + dc + ",!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel
	store := e.InformPods(t, ns, selector, onEveryEvent(w.observe))
	w.mu.Lock()
	w.store = store // events before this are seen by the observe below
	w.mu.Unlock()
	w.observe()
	return w
}

func (w *PodSetWatcher) observe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store == nil {
		return // still syncing
	}
	available := 0
	revisions := map[string]int{}
	for _, obj := range w.store.List() {
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			revisions[pod.Labels[stagehandv1.RevisionLabel]]++
		}
		if pod.DeletionTimestamp == nil && PodReady(pod) {
			available++
		}
	}
	w.events++
	w.lastAvailable, w.lastRevisions = available, revisions
	if w.minAvailable < 0 || available < w.minAvailable {
		w.minAvailable = available
	}
	if len(revisions) > w.maxRevisions {
		w.maxRevisions = len(revisions)
	}
	if len(revisions) > 1 && len(w.mixedSnapshots) < 5 {
		w.mixedSnapshots = append(w.mixedSnapshots, revisions)
	}
}

// MinAvailable is the fewest available pods seen since the watch started.
func (w *PodSetWatcher) MinAvailable() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minAvailable
}

// MaxRevisionsAtOnce is the most revisions whose pods existed at the same moment, and up to
// five examples of such moments (revision → pod count).
func (w *PodSetWatcher) MaxRevisionsAtOnce() (int, []map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxRevisions, w.mixedSnapshots
}

// Events is how many pod events the watcher has seen; a check over a watcher that saw
// nothing proves nothing.
func (w *PodSetWatcher) Events() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}
