package hookpod

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A hook pod whose container cannot start (podstatus.StuckContainer: a missing ConfigMap
// key, an image that cannot be pulled) fails its attempt once the grace of
// podstatus.DefaultStuckGrace has run out, instead of waiting out its
// activeDeadlineSeconds. The failure policy then applies as to any failed attempt: Abort
// stops the rollout, Retry starts a new pod within its maxAttempts (a ConfigMap created
// in between is picked up), Ignore goes on.

// stoppedDeadlineSeconds is the activeDeadlineSeconds that stops a stuck hook pod: the
// lowest the API accepts, and long past for a pod that has waited its grace.
const stoppedDeadlineSeconds = 1

// stop makes the kubelet fail a stuck hook pod (DeadlineExceeded) rather than start it
// whenever its reference is fixed: by then the rollout has moved on (aborted, or retrying
// with another pod), and a hook such as a migration must not run late or twice at once.
// It lowers the pod's activeDeadlineSeconds, the one spec field a pod may change that
// does this, and keeps the pod for inspection, as every failed hook pod. A failure to
// patch is printed, not returned: the pod then fails at its own deadline.
func (e *hookExecutor) stop(pod *corev1.Pod) {
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil && *ads <= stoppedDeadlineSeconds {
		return
	}
	// Its own context: the deployer may be on its way out.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	patch := []byte(`{"spec":{"activeDeadlineSeconds":1}}`)
	if _, err := e.pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && e.out != nil {
		e.out.Printf("hook pod %s: could not stop it (%v); it fails at its activeDeadlineSeconds", pod.Name, err)
	}
}

// recheck ends a watch when a stuck container's grace runs out: the watch only wakes on
// changes, and a stuck pod does not change.
type recheck struct {
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	now    func() time.Time
	fired  atomic.Bool
}

func newRecheck(parent context.Context, now func() time.Time) *recheck {
	r := &recheck{now: now}
	r.ctx, r.cancel = context.WithCancel(parent)
	r.timer = time.AfterFunc(time.Hour, func() {
		r.fired.Store(true)
		r.cancel()
	})
	r.timer.Stop()
	return r
}

// at sets the timer to t; ok false stops it.
func (r *recheck) at(t time.Time, ok bool) {
	r.timer.Stop()
	if ok {
		r.timer.Reset(t.Sub(r.now()))
	}
}

// stop releases the timer and the context, and reports whether the timer ended the watch.
func (r *recheck) stop() bool {
	r.timer.Stop()
	r.cancel()
	return r.fired.Load()
}
