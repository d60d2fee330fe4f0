package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxRetryAfter bounds the wait a registry can ask for, so that a broken Retry-After
// header cannot stop polling for good.
const maxRetryAfter = time.Hour

// registryTransport is the http.RoundTripper beneath go-containerregistry's. For each
// registry host it keeps a token bucket that every request takes from, and the time until
// which the host asked to be left alone (Retry-After on a 429 or 503). It also bounds each
// exchange with a timeout that starts once the request may go, so that a long wait for a
// token does not count against the registry.
type registryTransport struct {
	inner     http.RoundTripper
	limit     rate.Limit
	burst     int
	timeout   time.Duration
	allowHTTP func(host string) bool

	mu    sync.Mutex
	hosts map[string]*hostGate
}

// hostGate is the shared state of one registry host.
type hostGate struct {
	host    string
	limiter *rate.Limiter

	mu        sync.Mutex
	notBefore time.Time
}

// newRegistryTransport returns a registryTransport over opts.Transport, with the options
// defaulted.
func newRegistryTransport(opts ResolverOptions) *registryTransport {
	limit := rate.Limit(opts.RegistryQPS)
	if opts.RegistryQPS < 0 {
		limit = rate.Inf
	}
	return &registryTransport{
		inner:   opts.Transport,
		limit:   limit,
		burst:   opts.RegistryBurst,
		timeout: opts.RequestTimeout,
		allowHTTP: func(host string) bool {
			return isLoopback(host) || (opts.Insecure != nil && opts.Insecure(host))
		},
		hosts: map[string]*hostGate{},
	}
}

// gate returns the state of a host, creating it on first use.
func (t *registryTransport) gate(host string) *hostGate {
	host = strings.ToLower(host)
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.hosts[host]
	if !ok {
		g = &hostGate{host: host, limiter: rate.NewLimiter(t.limit, t.burst)}
		t.hosts[host] = g
	}
	return g
}

// RoundTrip waits until the host may be asked, sends the request, and notes a Retry-After.
// It refuses plain HTTP to a host that does not allow it: go-containerregistry falls back
// to plain HTTP by itself for private IP addresses (10.0.0.0/8 and the like), and a
// failed TLS handshake must not become an unencrypted request.
func (t *registryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.allowHTTP(req.URL.Host) {
		return nil, fmt.Errorf("plain HTTP to %s is not allowed: the registry is not on loopback, nor marked insecure", req.URL.Host)
	}
	g := t.gate(req.URL.Host)
	if err := g.wait(req.Context()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.inner.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if wait, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			g.pause(wait)
		}
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// wait blocks until the host's pause is over and a token is free. When ctx ends before
// the pause would, it fails at once with a *pausedError.
func (g *hostGate) wait(ctx context.Context) error {
	for {
		left := g.pausedFor()
		if left <= 0 {
			break
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < left {
			return &pausedError{host: g.host, wait: left}
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
	return g.limiter.Wait(ctx)
}

// pause keeps requests away from the host for wait (at most maxRetryAfter). A pause
// never shortens an earlier, longer one.
func (g *hostGate) pause(wait time.Duration) {
	wait = min(wait, maxRetryAfter)
	until := time.Now().Add(wait)
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.notBefore) {
		g.notBefore = until
	}
}

// pausedFor is how long the host's pause still lasts.
func (g *hostGate) pausedFor() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Until(g.notBefore)
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(value, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if date, err := http.ParseTime(value); err == nil {
		return max(date.Sub(now), 0), true
	}
	return 0, false
}

// pausedError is the failure of a request that could not wait for the end of its host's
// pause before its context ends.
type pausedError struct {
	host string
	wait time.Duration
}

func (e *pausedError) Error() string {
	return fmt.Sprintf("%s asked to be left alone for a while (Retry-After), longer than this request may wait", e.host)
}

// retryAfterError marks an error after which the registry asked to wait.
type retryAfterError struct {
	wait time.Duration
	err  error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter reports how long the registry asked to wait (Retry-After on a 429 or 503)
// after the request that failed with err. It reports false for other errors, and for a
// 429 without Retry-After.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.wait, true
	}
	var paused *pausedError
	if errors.As(err, &paused) {
		return paused.wait, true
	}
	return 0, false
}

// cancelOnClose ends the context of a response when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
