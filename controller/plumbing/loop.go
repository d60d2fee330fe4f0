// Package plumbing is the machinery that every Stagehand controller shares, written
// once: the named, rate-limited workqueue, the run order (STYLE 2), the retry policy with
// typed errors and its give-up event, the event recorder, the informers, the log fields
// and the metrics. A controller package keeps only its own sync logic.
package plumbing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// MaxRetries bounds the retries of one key. With the controllers' rate limiter (5 ms
// doubling, capped at 1000 s) the waits are 5 ms, 10 ms, 20 ms, ... 41 s, 82 s: fifteen
// attempts over about 2.7 minutes. After that the key is dropped until the next event or
// resync touches it.
const MaxRetries = 15

// NewQueue is a controller's workqueue: typed, named for the metrics, with client-go's
// default controller rate limiter (per-key exponential back-off and an overall bucket).
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// fatalError marks an error that a retry cannot fix (a corrupt annotation, an invalid
// object). It is logged and never retried.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal wraps err so that the queue drops the key instead of retrying it.
func Fatal(err error) error { return &fatalError{err: err} }

// requeueError asks for the key to come back after a delay, without counting as a failure:
// the sync waits for something (a pod to go away, a cache to catch up).
type requeueError struct {
	after  time.Duration
	reason string
}

func (e *requeueError) Error() string { return fmt.Sprintf("requeue after %s: %s", e.after, e.reason) }

// RequeueAfter asks for the key again after d, for reason, without counting a failure.
func RequeueAfter(d time.Duration, reason string) error {
	return &requeueError{after: d, reason: reason}
}

// Loop runs one controller: its queue, its sync handler and its retry policy.
type Loop struct {
	// Name names the controller in logs and in the cache-sync message; it is also the
	// queue's name.
	Name  string
	Queue workqueue.TypedRateLimitingInterface[string]
	Log   *logrus.Entry
	// Sync handles one key. It is called through a func so that a controller's
	// syncHandler field, which tests replace, is read at each call.
	Sync func(ctx context.Context, key string) error
	// GiveUp records the Warning event of a key whose retries ran out; may be nil.
	GiveUp func(key string, err error)
	// Synced are the informers to wait for before the first sync.
	Synced []cache.InformerSynced
	// Events, when set, is started towards Kube's events API and shut down at the end.
	Events record.EventBroadcaster
	Kube   kubernetes.Interface
	// Start, when set, runs in its own goroutine once the caches have synced.
	Start func(ctx context.Context)
}

// Run follows the run order of STYLE 2 and blocks until ctx is done: HandleCrash, queue
// shutdown, event broadcaster, cache sync, then workers.
func (l *Loop) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer l.Queue.ShutDown()
	if l.Events != nil {
		StartRecording(l.Events, l.Kube)
		defer l.Events.Shutdown()
	}
	l.Log.Info("Starting the controller")
	defer l.Log.Info("Stopped the controller")
	if !cache.WaitForNamedCacheSync(l.Name, ctx.Done(), l.Synced...) {
		return
	}
	if l.Start != nil {
		go l.Start(ctx)
	}
	for range max(workers, 1) {
		go wait.UntilWithContext(ctx, l.worker, time.Second)
	}
	<-ctx.Done()
}

func (l *Loop) worker(ctx context.Context) {
	for l.ProcessNextItem(ctx) {
	}
}

// ProcessNextItem runs one key of the queue through Sync and applies the retry policy:
// success and fatal errors forget the key, a RequeueAfter re-adds it after its delay,
// other errors are retried with back-off up to MaxRetries, then handed to GiveUp.
//
// A failing key is logged at Warning the first time it fails (and again when it fails
// after having succeeded), at Debug on the retries in between, and at Error when the
// retries run out. So a stuck DeploymentConfig shows at the default level at once,
// and a flapping one cannot flood the log: one line per streak of failures.
func (l *Loop) ProcessNextItem(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)

	err := l.Sync(ctx, key)
	var fe *fatalError
	var re *requeueError
	log := l.Log.WithField("key", key)
	switch {
	case err == nil:
		l.Queue.Forget(key)
	case errors.As(err, &re):
		l.Queue.Forget(key)
		l.Queue.AddAfter(key, re.after)
	case errors.As(err, &fe):
		log.WithError(err).Error("Dropping the key: the error cannot be fixed by a retry")
		l.Queue.Forget(key)
	case l.Queue.NumRequeues(key) < MaxRetries:
		if l.Queue.NumRequeues(key) == 0 {
			log.WithError(err).Warn("Sync failed; retrying with back-off")
		} else {
			log.WithError(err).WithField("retries", l.Queue.NumRequeues(key)).Debug("Sync failed again; retrying")
		}
		l.Queue.AddRateLimited(key)
	default:
		log.WithError(err).WithField("retries", MaxRetries).Error("Sync kept failing; dropping the key until it changes")
		l.Queue.Forget(key)
		if l.GiveUp != nil {
			l.GiveUp(key, err)
		}
	}
	return true
}

// IsRequeue reports whether err asks for its key again later (RequeueAfter) rather than
// reporting a failure.
func IsRequeue(err error) bool {
	var re *requeueError
	return errors.As(err, &re)
}
