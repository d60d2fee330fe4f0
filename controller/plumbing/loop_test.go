package plumbing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// loopFor is a Loop whose queue has no back-off delay, so that a test can drive retries.
func loopFor(sync func(context.Context, string) error) (*Loop, *test.Hook, *[]string) {
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	var gaveUp []string
	l := &Loop{
		Name: "test",
		Queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "test"}),
		Log:    logrus.NewEntry(logger),
		Sync:   sync,
		GiveUp: func(key string, err error) { gaveUp = append(gaveUp, key+": "+err.Error()) },
	}
	return l, hook, &gaveUp
}

func levels(hook *test.Hook) []logrus.Level {
	var out []logrus.Level
	for _, e := range hook.AllEntries() {
		out = append(out, e.Level)
	}
	return out
}

// A key that keeps failing is never dropped (invariant 9): past MaxRetries it is still
// requeued, never later than MaxRetryDelay, and GiveUp and the Error line come once.
func TestLoopNeverDropsAFailingKey(t *testing.T) {
	calls := 0
	l, hook, gaveUp := loopFor(func(context.Context, string) error { calls++; return errors.New("boom") })
	clk := clocktesting.NewFakeClock(time.Now())
	l.Queue = newQueue("test", clk)
	defer l.Queue.ShutDown()
	l.Queue.Add("ns/web")
	const failures = MaxRetries + 4
	for i := range failures {
		require.Eventually(t, func() bool { return l.Queue.Len() == 1 }, 5*time.Second, time.Millisecond,
			"failure %d: the key is back within MaxRetryDelay", i)
		require.True(t, l.ProcessNextItem(context.Background()))
		if i == failures-1 {
			break
		}
		clk.Step(MaxRetryDelay) // the key waits for its back-off, no longer than the cap
	}
	assert.Equal(t, failures, calls)
	assert.Equal(t, []string{"ns/web: boom"}, *gaveUp, "one give-up event per streak")
	assert.Equal(t, failures, l.Queue.NumRequeues("ns/web"), "still counted, still queued")
	clk.Step(MaxRetryDelay)
	assert.Eventually(t, func() bool { return l.Queue.Len() == 1 }, 5*time.Second, time.Millisecond, "not dropped")

	got := levels(hook)
	require.Len(t, got, failures)
	assert.Equal(t, logrus.WarnLevel, got[0], "the first failure shows at the default level")
	for i, lvl := range got[1:] {
		if i+1 == MaxRetries {
			assert.Equal(t, logrus.ErrorLevel, lvl, "reaching MaxRetries shows")
		} else {
			assert.Equal(t, logrus.DebugLevel, lvl, "the retries in between and after do not flood the log")
		}
	}
}

func TestLoopFatalIsNotRetried(t *testing.T) {
	l, hook, gaveUp := loopFor(func(context.Context, string) error { return Fatal(errors.New("corrupt snapshot")) })
	defer l.Queue.ShutDown()
	l.Queue.Add("ns/web")
	require.True(t, l.ProcessNextItem(context.Background()))
	assert.Equal(t, 0, l.Queue.Len())
	assert.Empty(t, *gaveUp, "a fatal error is logged, not retried until it gives up")
	assert.Equal(t, []logrus.Level{logrus.ErrorLevel}, levels(hook))
}

func TestLoopRequeueIsNoFailure(t *testing.T) {
	l, hook, _ := loopFor(func(context.Context, string) error { return RequeueAfter(time.Millisecond, "waiting") })
	defer l.Queue.ShutDown()
	l.Queue.Add("ns/web")
	require.True(t, l.ProcessNextItem(context.Background()))
	assert.Equal(t, 0, l.Queue.NumRequeues("ns/web"), "no failure counted")
	assert.Empty(t, hook.AllEntries())
	assert.Eventually(t, func() bool { return l.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond, "the key comes back")
	assert.True(t, IsRequeue(RequeueAfter(time.Second, "x")))
	assert.False(t, IsRequeue(errors.New("x")))
}

func TestLoopWarnsAgainAfterASuccess(t *testing.T) {
	fail := true
	l, hook, _ := loopFor(func(context.Context, string) error {
		if fail {
			return errors.New("boom")
		}
		return nil
	})
	defer l.Queue.ShutDown()
	l.Queue.Add("ns/web")
	require.True(t, l.ProcessNextItem(context.Background())) // fails: Warning
	fail = false
	require.True(t, l.ProcessNextItem(context.Background())) // succeeds: forgotten
	fail = true
	l.Queue.Add("ns/web")
	require.True(t, l.ProcessNextItem(context.Background())) // a new streak: Warning again
	assert.Equal(t, []logrus.Level{logrus.WarnLevel, logrus.WarnLevel}, levels(hook))
}
