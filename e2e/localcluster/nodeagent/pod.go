package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Pod-level failure reported when activeDeadlineSeconds runs out (same words as the kubelet).
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// deleteRetryInterval is how often deletePod asks again after a failed deletion.
var deleteRetryInterval = time.Second

// podWorker runs one pod from the moment it is bound to one of the agent's nodes until its
// object is deleted. One goroutine (run) owns the pod's lifecycle and its status writes;
// every container runs in a goroutine of its own (container.go).
type podWorker struct {
	a    *Agent
	gate *nodeGate // the pod's node's: the worker acts only while the node runs
	dir  string
	ip   string // the pod's IP: the node's, or its own (podip.go)
	log  *logrus.Entry

	updated chan struct{} // the pod object changed (cap 1)
	dirty   chan struct{} // the status changed (cap 1)
	removed chan struct{} // the pod object is gone from the API

	wg sync.WaitGroup // container goroutines

	idMu       sync.Mutex // serialises token minting
	idWanted   *bool      // nil until known
	idRefresh  time.Time  // when the token must be refreshed; zero: not minted
	removeOnce sync.Once

	volMu   sync.Mutex        // serialises volume set-up and mount links
	folders map[string]string // volume name -> its folder; nil until every volume resolved

	mu          sync.Mutex
	pod         *corev1.Pod // latest known object, never mutated
	ctrs        []*ctr      // init containers, then containers
	startTime   metav1.Time
	failReason  string // pod-level terminal failure, e.g. DeadlineExceeded
	failMessage string
	deleting    bool          // the pod is being deleted: its phase becomes terminal
	stopping    bool          // no container may start any more
	stopDone    chan struct{} // closed when every container goroutine has ended
	runCancel   context.CancelFunc
}

func newPodWorker(a *Agent, pod *corev1.Pod, gate *nodeGate) *podWorker {
	w := &podWorker{
		a:       a,
		gate:    gate,
		dir:     filepath.Join(a.cfg.Dir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		log:     a.log.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "node": pod.Spec.NodeName}),
		updated: make(chan struct{}, 1),
		dirty:   make(chan struct{}, 1),
		removed: make(chan struct{}),
		pod:     pod,
		ip:      podIP(pod, a.address, a.cfg.PodNetwork),
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		w.ctrs = append(w.ctrs, newCtr(c, true, sidecar, a.backoffBase, a.backoffMax))
	}
	for i := range pod.Spec.Containers {
		w.ctrs = append(w.ctrs, newCtr(&pod.Spec.Containers[i], false, false, a.backoffBase, a.backoffMax))
	}
	return w
}

// setPod records a newer version of the pod object.
func (w *podWorker) setPod(pod *corev1.Pod) {
	w.mu.Lock()
	if !olderThan(pod, w.pod) {
		w.pod = pod
	}
	w.mu.Unlock()
	notify(w.updated)
}

func (w *podWorker) latest() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// olderThan reports whether a has an older resourceVersion than b (they are integers in
// practice; anything else counts as not older).
func olderThan(a, b *corev1.Pod) bool {
	ra, err1 := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, err2 := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return err1 == nil && err2 == nil && ra < rb
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *podWorker) markDirty() { notify(w.dirty) }

// markRemoved tells the worker that the pod object is gone.
func (w *podWorker) markRemoved() { w.removeOnce.Do(func() { close(w.removed) }) }

// run drives the pod. It returns when the pod object is gone (deleted by this worker or by
// someone else) or when ctx is done (the agent stops; the spawner kills the processes).
// In the first case it removes the pod's emptyDir volumes; the pod folder stays. It does
// nothing while the pod's node is stopped (see StopNode).
func (w *podWorker) run(ctx context.Context) {
	defer w.a.forget(w)
	if _, ok := w.gate.wait(ctx); !ok {
		return
	}
	pod := w.latest()
	if isTerminal(pod.Status.Phase) {
		// Already finished (for example by an earlier agent): never run it again.
		if w.waitForDeletion(ctx) {
			w.removePrivateVolumes()
		}
		return
	}
	if pod.DeletionTimestamp != nil {
		if w.deleteObject(ctx) {
			w.removePrivateVolumes()
		}
		return
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		w.log.WithError(err).Error("creating pod directory")
	}
	w.mu.Lock()
	w.startTime = nowSecond()
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	}
	runCtx, cancel := context.WithCancel(ctx)
	w.runCancel = cancel
	w.mu.Unlock()
	defer cancel()

	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.runContainers(runCtx)
	}()
	w.markDirty()
	l := &podLoop{w: w}
	l.resetDeadline(pod)
	l.run(ctx)
}

// waitForDeletion handles a pod that is already terminal: it only deletes it once asked to.
// It reports whether the pod is gone (false: the agent stops).
func (w *podWorker) waitForDeletion(ctx context.Context) bool {
	for {
		if _, ok := w.gate.wait(ctx); !ok {
			return false
		}
		if w.latest().DeletionTimestamp != nil {
			return w.deleteObject(ctx)
		}
		select {
		case <-ctx.Done():
			return false
		case <-w.removed:
			_, ok := w.gate.wait(ctx)
			return ok
		case <-w.updated:
		}
	}
}

// deleteObject deletes the pod object once the node runs, and again when a node stop cut
// the deletion short. It reports false when ctx ended first.
func (w *podWorker) deleteObject(ctx context.Context) bool {
	for {
		nodeCtx, ok := w.gate.wait(ctx)
		if !ok {
			return false
		}
		if w.deletePod(nodeCtx) {
			return true
		}
	}
}

// stopIfFinished stops what still runs (sidecars) once the pod's phase is terminal.
func (w *podWorker) stopIfFinished() {
	w.mu.Lock()
	finished := !w.stopping && isTerminal(w.phaseLocked())
	w.mu.Unlock()
	if finished {
		w.stopContainers(terminationGrace(w.latest()))
	}
}

// stopContainers stops the pod's containers: no container starts any more, every process
// group gets SIGTERM, and whatever still runs after grace gets SIGKILL. The returned channel
// is closed when every container goroutine has ended. Calling it again returns the same
// channel.
func (w *podWorker) stopContainers(grace time.Duration) <-chan struct{} {
	w.mu.Lock()
	if w.stopDone != nil {
		ch := w.stopDone
		w.mu.Unlock()
		return ch
	}
	w.stopping = true
	w.stopDone = make(chan struct{})
	done := w.stopDone
	if w.runCancel != nil {
		w.runCancel()
	}
	procs := w.liveProcsLocked()
	w.mu.Unlock()

	go func() {
		defer close(done)
		for _, p := range procs {
			p.signal(syscall.SIGTERM)
		}
		ended := make(chan struct{})
		go func() { w.wg.Wait(); close(ended) }()
		select {
		case <-ended:
			return
		case <-time.After(grace):
		}
		w.mu.Lock()
		procs := w.liveProcsLocked()
		w.mu.Unlock()
		for _, p := range procs {
			p.signal(syscall.SIGKILL)
		}
		<-ended
	}()
	return done
}

func (w *podWorker) liveProcsLocked() []*proc {
	var procs []*proc
	for _, c := range w.ctrs {
		if c.proc != nil {
			procs = append(procs, c.proc)
		}
	}
	return procs
}

// deletePod removes the pod object for good, with grace 0 and a UID precondition so that a
// new pod of the same name is never hit. Like a kubelet's status manager it keeps asking
// until the apiserver answers: a deletion lost to an apiserver restart would otherwise
// leave the pod Terminating for ever, as the worker ends and no later event revives it. It
// reports false when ctx ended first (the node stopped, or the agent).
func (w *podWorker) deletePod(ctx context.Context) bool {
	pod := w.latest()
	zero := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}}
	err := wait.PollUntilContextCancel(ctx, deleteRetryInterval, true, func(ctx context.Context) (bool, error) {
		err := w.a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
		switch {
		case err == nil:
			w.log.Debug("pod deleted")
			return true, nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return true, nil // gone already, or a new pod under the name
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
		w.log.WithError(err).Warn("deleting pod; asking again")
		return false, nil
	})
	return err == nil
}

func terminationGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

func isTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// findCtr returns the named container of the pod, or nil.
func (w *podWorker) findCtr(name string) *ctr {
	for _, c := range w.ctrs {
		if c.spec.Name == name {
			return c
		}
	}
	return nil
}
