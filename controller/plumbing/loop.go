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
	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// The retry policy of a failing key (DESIGN §4, invariant 9: no key is forgotten while
// its object is not terminal). The per-key back-off starts at RetryBaseDelay and doubles
// up to MaxRetryDelay: 5 ms, 10 ms, 20 ms, ... 41 s, 82 s, 164 s, then every 5 minutes.
// MaxRetries failures (about 2.7 minutes) make the give-up Warning event and an Error
// line, once per streak; the key is retried after that as before, every MaxRetryDelay,
// until a sync succeeds, returns a fatal error or the object is gone.
const (
	MaxRetries     = 15
	RetryBaseDelay = 5 * time.Millisecond
	MaxRetryDelay  = 5 * time.Minute
)

// NewQueue is a controller's workqueue: typed, named for the metrics, with client-go's
// controller rate limiter (an overall bucket of 10 per second, burst 100) and a per-key
// exponential back-off capped at MaxRetryDelay instead of client-go's 1000 s.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return newQueue(name, nil)
}

// newQueue is NewQueue on clock (nil: the real one), so that a test can step time.
func newQueue(name string, clock clock.WithTicker) workqueue.TypedRateLimitingInterface[string] {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](RetryBaseDelay, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clock})
}

// fatalError marks an error that a retry cannot fix (a malformed key, an object that
// cannot be turned into what the sync needs). It is logged and never retried: the key
// comes back only with the object's next change. Use it only for such errors, since a
// fatal key is the one exception to "no key is forgotten".
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal wraps err so that the queue drops the key instead of retrying it.
func Fatal(err error) error { return &fatalError{err: err} }

// IsFatal reports whether err is, or wraps, a Fatal error.
func IsFatal(err error) bool {
	var f *fatalError
	return errors.As(err, &f)
}

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
	// GiveUp records the Warning event of a key that failed MaxRetries times in a row
	// (it is still retried); may be nil.
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
// other errors are retried with back-off that grows to MaxRetryDelay, and never dropped;
// the failure that reaches MaxRetries is handed to GiveUp, once per streak.
//
// A failing key is logged at Warning the first time it fails (and again when it fails
// after having succeeded), at Debug on the retries in between and after, and at Error
// when the retries reach MaxRetries. So a stuck DeploymentConfig shows at the default level at once,
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
	default:
		switch n := l.Queue.NumRequeues(key); n {
		case 0:
			log.WithError(err).Warn("Sync failed; retrying with back-off")
		case MaxRetries:
			log.WithError(err).WithField("retries", n).Error("Sync kept failing; still retrying, at most every " + MaxRetryDelay.String())
			if l.GiveUp != nil {
				l.GiveUp(key, err)
			}
		default:
			log.WithError(err).WithField("retries", n).Debug("Sync failed again; retrying")
		}
		// Never dropped (invariant 9): past MaxRetries the back-off stays at its cap.
		l.Queue.AddRateLimited(key)
	}
	return true
}

// IsRequeue reports whether err asks for its key again later (RequeueAfter) rather than
// reporting a failure.
func IsRequeue(err error) bool {
	var re *requeueError
	return errors.As(err, &re)
}
