package nodeagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podEvent is what a pod worker's loop acts on.
type podEvent int

const (
	eventRemoved  podEvent = iota + 1 // the pod object is gone
	eventDirty                        // the status changed
	eventDeadline                     // activeDeadlineSeconds ran out
	eventUpdated                      // the pod object changed
	eventStopped                      // the containers of the deleted pod have stopped
)

// podLoop is the event loop of a pod worker whose containers were started.
type podLoop struct {
	w             *podWorker
	deadline      <-chan time.Time
	deadlineTimer *time.Timer
	deletion      <-chan struct{} // set once the pod's deletion began
}

// run handles the pod's events until the pod object is gone or ctx ends. It acts only while
// the node runs; an event that comes while the node is stopped waits for it to start again,
// when the loop resyncs the pod's status and reads the pod object again (StartNode).
func (l *podLoop) run(ctx context.Context) {
	w := l.w
	var nodeCtx context.Context
	for {
		current, ok := w.gate.wait(ctx)
		if !ok {
			return
		}
		if nodeCtx != nil && current != nodeCtx {
			// The node started again: what changed meanwhile was not acted on.
			w.markDirty()
			notify(w.updated)
		}
		nodeCtx = current
		var ev podEvent
		select {
		case <-ctx.Done():
			return
		case <-nodeCtx.Done():
			continue
		case <-w.removed:
			ev = eventRemoved
		case <-w.dirty:
			ev = eventDirty
		case <-l.deadline:
			ev = eventDeadline
		case <-w.updated:
			ev = eventUpdated
		case <-l.deletion:
			ev = eventStopped
		}
		if nodeCtx.Err() != nil {
			// The node stopped meanwhile. The resync when it starts again covers ev; a
			// deadline is set again from the pod object then.
			continue
		}
		if l.handle(nodeCtx, ev) {
			return
		}
	}
}

// handle acts on one event, with nodeCtx for the API calls. It reports whether the worker
// is done.
func (l *podLoop) handle(nodeCtx context.Context, ev podEvent) bool {
	w := l.w
	switch ev {
	case eventRemoved:
		// Force-deleted: nothing to report any more.
		<-w.stopContainers(0)
		w.removePrivateVolumes()
		return true
	case eventDirty:
		if w.syncStatus(nodeCtx) {
			w.stopIfFinished()
		}
	case eventDeadline:
		l.deadline = nil
		w.mu.Lock()
		if w.failReason == "" && !w.stopping {
			w.failReason, w.failMessage = reasonDeadlineExceeded, messageDeadlineExceeded
			w.log.Info("active deadline exceeded, stopping the pod")
		}
		w.mu.Unlock()
		w.stopContainers(terminationGrace(w.latest()))
		w.markDirty()
	case eventUpdated:
		pod := w.latest()
		if pod.DeletionTimestamp == nil {
			l.resetDeadline(pod)
			return false
		}
		if l.deletion == nil {
			w.mu.Lock()
			w.deleting = true
			w.mu.Unlock()
			grace := time.Duration(0)
			if g := pod.DeletionGracePeriodSeconds; g != nil {
				grace = time.Duration(*g) * time.Second
			}
			w.log.WithField("grace", grace).Debug("pod is being deleted, stopping its containers")
			l.deletion = w.stopContainers(grace)
		}
	case eventStopped:
		w.syncStatus(nodeCtx)
		if !w.deletePod(nodeCtx) {
			return false // the node stopped: deleted once it runs again
		}
		w.removePrivateVolumes()
		return true
	}
	return false
}

// resetDeadline arms the timer of the pod's activeDeadlineSeconds, counted from the pod's
// start; a deadline already past fires at once.
func (l *podLoop) resetDeadline(pod *corev1.Pod) {
	if l.deadlineTimer != nil {
		l.deadlineTimer.Stop()
		l.deadline = nil
	}
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil {
		l.w.mu.Lock()
		start := l.w.startTime
		l.w.mu.Unlock()
		l.deadlineTimer = time.NewTimer(time.Until(start.Add(time.Duration(*ads) * time.Second)))
		l.deadline = l.deadlineTimer.C
	}
}
