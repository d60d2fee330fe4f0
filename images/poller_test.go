package images

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubResolver resolves every reference to one digest.
type stubResolver struct{ digest string }

func (s stubResolver) Resolve(context.Context, string, authn.Keychain) (string, error) {
	return s.digest, nil
}

func TestWatcherDelay(t *testing.T) {
	w := NewWatcher(WatcherOptions{Interval: time.Minute, Jitter: 0.1, MaxBackoff: 10 * time.Minute, Resolver: stubResolver{}}, nil)
	tests := []struct {
		name       string
		failures   int
		retryAfter time.Duration
		r          float64 // the random number
		want       time.Duration
	}{
		{name: "success", r: 0.5, want: time.Minute},
		{name: "success, least jitter", r: 0, want: 54 * time.Second},
		{name: "success, most jitter", r: 0.75, want: 63 * time.Second},
		{name: "first failure", failures: 1, r: 0.5, want: time.Minute},
		{name: "second failure", failures: 2, r: 0.5, want: 2 * time.Minute},
		{name: "third failure", failures: 3, r: 0.5, want: 4 * time.Minute},
		{name: "fifth failure is capped", failures: 5, r: 0.5, want: 10 * time.Minute},
		{name: "many failures stay capped", failures: 200, r: 0.5, want: 10 * time.Minute},
		{name: "Retry-After longer than the backoff", failures: 1, retryAfter: 5 * time.Minute, r: 0, want: 5 * time.Minute},
		{name: "Retry-After is only lengthened by jitter", failures: 1, retryAfter: 5 * time.Minute, r: 0.5, want: 5*time.Minute + 15*time.Second},
		{name: "Retry-After shorter than the backoff", failures: 3, retryAfter: time.Second, r: 0.5, want: 4 * time.Minute},
		{name: "Retry-After is bounded", failures: 1, retryAfter: 24 * time.Hour, r: 0, want: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, w.delay(tt.failures, tt.retryAfter, tt.r))
		})
	}
}

func TestNewWatcherDefaults(t *testing.T) {
	tests := []struct {
		name           string
		opts           WatcherOptions
		wantInterval   time.Duration
		wantJitter     float64
		wantMaxBackoff time.Duration
	}{
		{name: "zero", wantInterval: DefaultInterval, wantJitter: DefaultJitter, wantMaxBackoff: DefaultMaxBackoff},
		{name: "no jitter", opts: WatcherOptions{Jitter: -1}, wantInterval: DefaultInterval, wantJitter: 0, wantMaxBackoff: DefaultMaxBackoff},
		{name: "jitter is bounded", opts: WatcherOptions{Jitter: 0.9}, wantInterval: DefaultInterval, wantJitter: maxJitter, wantMaxBackoff: DefaultMaxBackoff},
		{
			name:         "backoff never below the interval",
			opts:         WatcherOptions{Interval: time.Hour, Jitter: 0.2, MaxBackoff: time.Minute},
			wantInterval: time.Hour, wantJitter: 0.2, wantMaxBackoff: time.Hour,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Resolver = stubResolver{}
			w := NewWatcher(tt.opts, nil)
			assert.Equal(t, tt.wantInterval, w.opts.Interval)
			assert.InDelta(t, tt.wantJitter, w.opts.Jitter, 1e-9)
			assert.Equal(t, tt.wantMaxBackoff, w.opts.MaxBackoff)
		})
	}
	assert.Panics(t, func() { NewWatcher(WatcherOptions{}, nil) })
}

func TestWatcherResultOfABadDigest(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w, n := newTestWatcher(WatcherOptions{
		Interval: time.Hour,
		Resolver: stubResolver{digest: "sha256:short"},
		Now:      func() time.Time { return now },
	})
	runWatcher(t, w)
	w.SetWatches("ns/dc", []Watch{{Ref: "reg.example.com/team/app:stable"}})

	require.Eventually(t, func() bool { return n.count("ns/dc") == 1 }, eventually, 5*time.Millisecond)
	res, ok := w.Latest("reg.example.com/team/app:stable", "")
	require.True(t, ok)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "resolving reg.example.com/team/app:stable: the registry answered a digest that does not pin")
	assert.Empty(t, res.Digest)
	assert.Empty(t, res.Image)
	assert.Equal(t, now, res.CheckedAt)
}
