package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
)

// maxRetries bounds the retries of one key. With the controllers' rate limiter (5 ms
// doubling, capped at 1000 s) the waits are 5 ms, 10 ms, 20 ms, ... 41 s, 82 s: fifteen
// attempts over about 2.7 minutes. After that the key is dropped until the next event or
// resync touches it.
const maxRetries = 15

// fatalError marks an error that a retry cannot fix (a corrupt annotation, an invalid
// object). It is logged and never retried.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// fatal wraps err so that the queue drops the key instead of retrying it.
func fatal(err error) error { return &fatalError{err: err} }

// requeueError asks for the key to come back after a delay, without counting as a failure:
// the sync waits for something (a pod to go away, a cache to catch up).
type requeueError struct {
	after  time.Duration
	reason string
}

func (e *requeueError) Error() string { return fmt.Sprintf("requeue after %s: %s", e.after, e.reason) }

func requeueAfter(d time.Duration, reason string) error {
	return &requeueError{after: d, reason: reason}
}

// processNextItem runs one key of the queue through sync and applies the retry policy:
// success and fatal errors forget the key, a requeueError re-adds it after its delay,
// other errors are retried with back-off up to maxRetries, then handed to giveUp.
func processNextItem(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], log *logrus.Entry,
	sync func(context.Context, string) error, giveUp func(key string, err error)) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)

	err := sync(ctx, key)
	var fe *fatalError
	var re *requeueError
	switch {
	case err == nil:
		queue.Forget(key)
	case errors.As(err, &re):
		queue.Forget(key)
		queue.AddAfter(key, re.after)
	case errors.As(err, &fe):
		log.WithField("key", key).WithError(err).Error("Dropping the key: the error cannot be fixed by a retry")
		queue.Forget(key)
	case queue.NumRequeues(key) < maxRetries:
		log.WithField("key", key).WithError(err).Debug("Sync failed; retrying")
		queue.AddRateLimited(key)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping key after retries", "key", key, "retries", maxRetries)
		queue.Forget(key)
		if giveUp != nil {
			giveUp(key, err)
		}
	}
	return true
}
