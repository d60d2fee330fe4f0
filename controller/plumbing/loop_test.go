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

func TestLoopRetriesThenGivesUp(t *testing.T) {
	calls := 0
	l, hook, gaveUp := loopFor(func(context.Context, string) error { calls++; return errors.New("boom") })
	defer l.Queue.ShutDown()
	l.Queue.Add("ns/web")
	for range MaxRetries + 1 {
		require.True(t, l.ProcessNextItem(context.Background()))
	}
	assert.Equal(t, MaxRetries+1, calls, "the first try and MaxRetries retries")
	assert.Equal(t, []string{"ns/web: boom"}, *gaveUp)
	assert.Equal(t, 0, l.Queue.Len(), "dropped after giving up")

	got := levels(hook)
	require.Len(t, got, MaxRetries+1)
	assert.Equal(t, logrus.WarnLevel, got[0], "the first failure shows at the default level")
	for _, lvl := range got[1:MaxRetries] {
		assert.Equal(t, logrus.DebugLevel, lvl, "the retries in between do not flood the log")
	}
	assert.Equal(t, logrus.ErrorLevel, got[MaxRetries], "giving up shows")
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
