package images

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// poller checks one reference under one set of credentials. Its fields other than the
// channels are guarded by Watcher.mu.
type poller struct {
	key       pollerKey
	canonical string // the reference as go-containerregistry names it, for Poke
	keychain  authn.Keychain

	subs   map[string]uint64 // subscriber -> the generation it was last notified of
	gen    uint64            // counts the changes of result; 0 until the first check
	result Result
	cancel context.CancelFunc // stops the goroutine; nil when not running

	poke chan struct{} // check now
	wake chan struct{} // notify the subscribers who joined
}

func newPoller(key pollerKey, keychain authn.Keychain) *poller {
	return &poller{
		key:       key,
		canonical: canonicalRef(key.ref),
		keychain:  keychain,
		subs:      map[string]uint64{},
		poke:      make(chan struct{}, 1),
		wake:      make(chan struct{}, 1),
	}
}

// signal sends on a channel of the poller without blocking; a signal already pending
// covers this one.
func (p *poller) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// canonicalRef is the full name of a tag reference, or the reference itself when it
// does not parse.
func canonicalRef(ref string) string {
	tag, err := ParseTag(ref)
	if err != nil {
		return ref
	}
	return tag.Name()
}

// poll is the loop of one poller: check, notify, wait, until ctx ends.
func (w *Watcher) poll(ctx context.Context, p *poller) {
	failures := 0
	var notBefore time.Time // the end of a Retry-After, which a poke does not cut short
	for {
		select {
		case <-p.poke: // this check answers a poke that came before it
		default:
		}
		res, retryAfter := w.check(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if res.Err == nil {
			failures = 0
		} else {
			failures++
		}
		w.deliver(p, &res)
		if retryAfter > 0 {
			notBefore = w.opts.Now().Add(retryAfter)
		}

		timer := time.NewTimer(w.delay(failures, retryAfter, rand.Float64()))
		due := w.waitForCheck(ctx, p, timer, notBefore)
		timer.Stop()
		if !due {
			return
		}
	}
}

// waitForCheck waits until the next check is due: the timer fires, or a poke arrives
// and no Retry-After forbids asking yet. Meanwhile it notifies the subscribers who join.
// It returns false when ctx ends.
func (w *Watcher) waitForCheck(ctx context.Context, p *poller, timer *time.Timer, notBefore time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-p.wake:
			w.deliver(p, nil)
		case <-p.poke:
			left := notBefore.Sub(w.opts.Now())
			if left <= 0 {
				return true
			}
			timer.Reset(left)
		}
	}
}

// check resolves the reference once, and returns the result with the wait the registry
// asked for, if any.
func (w *Watcher) check(ctx context.Context, p *poller) (Result, time.Duration) {
	res := Result{Ref: p.key.ref}
	digest, err := w.opts.Resolver.Resolve(ctx, p.key.ref, p.keychain)
	if err == nil {
		res.Image, err = Pin(p.key.ref, digest)
		if err == nil {
			res.Digest = digest
		} else {
			err = fmt.Errorf("resolving %s: the registry answered a digest that does not pin: %w", p.key.ref, err)
		}
	}
	res.Err = err
	res.CheckedAt = w.opts.Now()
	wait, _ := RetryAfter(err)
	return res, wait
}

// deliver publishes a result (nil: none, only the subscribers who joined) and notifies.
func (w *Watcher) deliver(p *poller, res *Result) {
	for _, sub := range w.publish(p, res) {
		w.notify(sub)
	}
}

// delay is the wait after a check: Interval after a success; after consecutive failures,
// Interval doubled for each failure after the first, up to MaxBackoff; and at least
// what the registry asked for (up to maxRetryAfter). Jitter varies the wait by up to
// its fraction, up or down, except that it never shortens a Retry-After. r is a random
// number in [0, 1).
func (w *Watcher) delay(failures int, retryAfter time.Duration, r float64) time.Duration {
	d := w.opts.Interval
	for i := 1; i < failures && d < w.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, w.opts.MaxBackoff)
	d = time.Duration(float64(d) * (1 + w.opts.Jitter*(2*r-1)))
	if retryAfter > 0 {
		ra := min(retryAfter, maxRetryAfter)
		d = max(d, time.Duration(float64(ra)*(1+w.opts.Jitter*r)))
	}
	return d
}
