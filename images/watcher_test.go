package images

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventually is the patience of the tests that wait for pollers; generous, for loaded
// machines.
const eventually = 10 * time.Second

// notifications counts the notifications of each subscriber.
type notifications struct {
	mu     sync.Mutex
	counts map[string]int
}

func (n *notifications) notify(subscriber string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.counts == nil {
		n.counts = map[string]int{}
	}
	n.counts[subscriber]++
}

func (n *notifications) count(subscriber string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts[subscriber]
}

// runWatcher runs a watcher until the test ends.
func runWatcher(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// newTestWatcher is a watcher of short intervals without jitter, and its notifications.
func newTestWatcher(opts WatcherOptions) (*Watcher, *notifications) {
	if opts.Resolver == nil {
		opts.Resolver = NewResolver(ResolverOptions{RegistryQPS: -1})
	}
	if opts.Jitter == 0 {
		opts.Jitter = -1
	}
	n := &notifications{}
	return NewWatcher(opts, n.notify), n
}

// waitForDigest waits until the latest result of ref is digest.
func waitForDigest(t *testing.T, w *Watcher, ref, digest string) Result {
	t.Helper()
	var res Result
	require.Eventually(t, func() bool {
		var ok bool
		res, ok = w.Latest(ref, "")
		return ok && res.Digest == digest
	}, eventually, 5*time.Millisecond, "waiting for %s to resolve to %s", ref, digest)
	return res
}

func TestWatcherFollowsTag(t *testing.T) {
	reg := newTestRegistry(t)
	first := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	w, n := newTestWatcher(WatcherOptions{Interval: 50 * time.Millisecond})

	w.SetWatches("ns/dc", []Watch{{Ref: ref}}) // before Run
	runWatcher(t, w)

	res := waitForDigest(t, w, ref, first)
	assert.NoError(t, res.Err)
	assert.Equal(t, ref, res.Ref)
	assert.Equal(t, reg.ref("team/app@"+first), res.Image)
	assert.False(t, res.CheckedAt.IsZero())
	require.Eventually(t, func() bool { return n.count("ns/dc") == 1 }, eventually, 5*time.Millisecond)

	// The tag moves.
	second := reg.pushRandom(t, "team/app:stable")
	waitForDigest(t, w, ref, second)
	require.Eventually(t, func() bool { return n.count("ns/dc") == 2 }, eventually, 5*time.Millisecond)

	// The same content again: same digest, no news.
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	third := reg.push(t, "team/app:stable", img)
	waitForDigest(t, w, ref, third)
	reg.push(t, "team/app:stable", img)
	seen := len(reg.manifestRequests())
	require.Eventually(t, func() bool { return len(reg.manifestRequests()) >= seen+3 }, eventually, 5*time.Millisecond)
	assert.Equal(t, 3, n.count("ns/dc"))
}

func TestWatcherSharesPollers(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	// No timed check within the test: every check is the first one or answers a poke, so
	// the manifest requests can be counted exactly.
	w, n := newTestWatcher(WatcherOptions{Interval: time.Hour})
	runWatcher(t, w)

	w.SetWatches("ns/one", []Watch{{Ref: ref}, {Ref: ref}})
	waitForDigest(t, w, ref, digest)
	w.SetWatches("ns/two", []Watch{{Ref: ref}})

	// The subscriber that joined after the first check hears of it too.
	require.Eventually(t, func() bool { return n.count("ns/one") == 1 && n.count("ns/two") == 1 }, eventually, 5*time.Millisecond)
	w.mu.Lock()
	assert.Len(t, w.pollers, 1)
	w.mu.Unlock()

	// One poller asks once per check; a poller per watch would ask three times.
	const pokes = 3
	for i := range pokes {
		require.Equal(t, 1, w.Poke(ref), "the three watches of one reference share one poller")
		require.Eventually(t, func() bool { return len(reg.manifestRequests()) >= i+2 }, eventually, 5*time.Millisecond,
			"the check that answers poke %d", i+1)
	}
	waitForDigest(t, w, ref, digest)
	assert.Len(t, reg.manifestRequests(), 1+pokes, "one request for the first check and one per poke")
	assert.Equal(t, 1, n.count("ns/one"), "the digest did not change")
	assert.Equal(t, 1, n.count("ns/two"))

	// Other credentials mean another poller.
	w.SetWatches("ns/three", []Watch{{Ref: ref, Credentials: Credentials{ID: "ns/pull@1"}}})
	require.Eventually(t, func() bool { _, ok := w.Latest(ref, "ns/pull@1"); return ok }, eventually, 5*time.Millisecond)
	w.mu.Lock()
	assert.Len(t, w.pollers, 2)
	w.mu.Unlock()
	assert.Equal(t, 2, w.Poke(ref))
}

func TestWatcherStopsWithoutSubscribers(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	const interval = 50 * time.Millisecond
	w, _ := newTestWatcher(WatcherOptions{Interval: interval})
	runWatcher(t, w)

	w.SetWatches("ns/one", []Watch{{Ref: ref}})
	w.SetWatches("ns/two", []Watch{{Ref: ref}})
	waitForDigest(t, w, ref, digest)
	w.SetWatches("ns/one", nil)
	_, ok := w.Latest(ref, "")
	assert.True(t, ok, "one subscriber is left")

	w.SetWatches("ns/two", []Watch{})
	_, ok = w.Latest(ref, "")
	assert.False(t, ok)
	time.Sleep(interval) // a check that was under way ends
	before := len(reg.manifestRequests())
	time.Sleep(5 * interval)
	assert.Len(t, reg.manifestRequests(), before, "no request after the last subscriber left")
	w.mu.Lock()
	assert.Empty(t, w.pollers)
	assert.Empty(t, w.subs)
	w.mu.Unlock()
}

func TestWatcherPoke(t *testing.T) {
	reg := newTestRegistry(t)
	first := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	w, n := newTestWatcher(WatcherOptions{Interval: time.Hour})
	runWatcher(t, w)
	w.SetWatches("ns/dc", []Watch{{Ref: ref}})
	waitForDigest(t, w, ref, first)

	second := reg.pushRandom(t, "team/app:stable")
	assert.Equal(t, 0, w.Poke(reg.ref("team/other:stable")))
	assert.Equal(t, 1, w.Poke(reg.ref("team/app:stable")))
	waitForDigest(t, w, ref, second)
	require.Eventually(t, func() bool { return n.count("ns/dc") == 2 }, eventually, 5*time.Millisecond)
}

func TestWatcherBacksOffAndRecovers(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	const failures = 4
	var mu sync.Mutex
	failed := 0
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if isManifest(r, "team/app") && failed < failures {
			failed++
			w.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	const interval = 50 * time.Millisecond
	w, n := newTestWatcher(WatcherOptions{Interval: interval, MaxBackoff: 8 * interval})
	runWatcher(t, w)
	w.SetWatches("ns/dc", []Watch{{Ref: ref}})

	// The first failure is news; the same failure again is not.
	require.Eventually(t, func() bool { return n.count("ns/dc") == 1 }, eventually, 5*time.Millisecond)
	res, ok := w.Latest(ref, "")
	require.True(t, ok)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "500 Internal Server Error")
	assert.Contains(t, res.Err.Error(), ref)
	assert.Empty(t, res.Digest)
	assert.Empty(t, res.Image)

	// The success clears the error, and that is news.
	res = waitForDigest(t, w, ref, digest)
	assert.NoError(t, res.Err)
	require.Eventually(t, func() bool { return n.count("ns/dc") == 2 }, eventually, 5*time.Millisecond)

	// The waits between the failed requests doubled, up to MaxBackoff. Timers do not
	// fire early, so these lower bounds hold however loaded the machine is.
	requests := reg.manifestRequests()
	require.GreaterOrEqual(t, len(requests), failures+1)
	for i, want := range []time.Duration{interval, 2 * interval, 4 * interval, 8 * interval} {
		gap := requests[i+1].at.Sub(requests[i].at)
		assert.GreaterOrEqual(t, gap, want-10*time.Millisecond, "wait after failure %d", i+1)
	}
}

func TestWatcherHonoursRetryAfter(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.pushRandom(t, "team/app:stable")
	ref := reg.ref("team/app:stable")
	var mu sync.Mutex
	limited := false
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if isManifest(r, "team/app") && !limited {
			limited = true
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	w, n := newTestWatcher(WatcherOptions{Interval: 50 * time.Millisecond})
	runWatcher(t, w)
	w.SetWatches("ns/dc", []Watch{{Ref: ref}})

	require.Eventually(t, func() bool { return n.count("ns/dc") == 1 }, eventually, 5*time.Millisecond)
	res, _ := w.Latest(ref, "")
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "429 Too Many Requests")

	// A poke does not cut the wait short.
	assert.Equal(t, 1, w.Poke(ref))
	waitForDigest(t, w, ref, digest)
	require.Eventually(t, func() bool { return n.count("ns/dc") == 2 }, eventually, 5*time.Millisecond)
	requests := reg.manifestRequests()
	require.GreaterOrEqual(t, len(requests), 2)
	assert.GreaterOrEqual(t, requests[1].at.Sub(requests[0].at), time.Second-50*time.Millisecond,
		"no request before Retry-After elapsed")
}

func TestWatcherRateLimitsPerRegistry(t *testing.T) {
	reg := newTestRegistry(t)
	const pollers = 6
	for i := range pollers {
		reg.pushRandom(t, fmt.Sprintf("team/app%d:stable", i))
	}
	const qps, burst = 20, 3
	start := time.Now()
	w, _ := newTestWatcher(WatcherOptions{
		Interval: 10 * time.Millisecond,
		Resolver: NewResolver(ResolverOptions{RegistryQPS: qps, RegistryBurst: burst}),
	})
	runWatcher(t, w)
	for i := range pollers {
		w.SetWatches(fmt.Sprintf("ns/dc%d", i), []Watch{{Ref: reg.ref(fmt.Sprintf("team/app%d:stable", i))}})
	}

	time.Sleep(time.Second)
	end := time.Now()
	got := reg.countRequests("", end)
	allowed := burst + int(qps*end.Sub(start).Seconds())
	assert.LessOrEqual(t, got, allowed+1, "requests in %v", end.Sub(start))
	// Without the limit, six pollers every 10 ms would send several hundred.
	assert.Greater(t, got, burst, "the pollers were busy")
}
