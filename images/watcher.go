package images

import (
	"context"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Defaults of WatcherOptions.
const (
	DefaultInterval   = 60 * time.Second
	DefaultJitter     = 0.1
	DefaultMaxBackoff = 10 * time.Minute

	// maxJitter bounds Jitter, so that no wait shrinks to nothing.
	maxJitter = 0.5
)

// Result is the outcome of the latest check of one watched reference.
type Result struct {
	// Ref is the watched tag reference as given, such as "reg:5000/team/app:stable".
	Ref string
	// Digest is the digest ("sha256:…") the tag resolved to; empty when the check failed.
	Digest string
	// Image is the pinned reference, such as "reg:5000/team/app@sha256:…" (the repository
	// of Ref, "@", and Digest); empty when the check failed.
	Image string
	// Err is nil on success, and otherwise an error naming the image and what the
	// registry answered.
	Err error
	// CheckedAt is when the check finished.
	CheckedAt time.Time
}

// Credentials identify and provide the registry credentials of a watch.
type Credentials struct {
	// ID is the identity of the credentials, for sharing pollers: equal IDs mean equal
	// credentials (such as the namespace with the names and resourceVersions of the
	// secrets). An empty ID means anonymous.
	ID string
	// Keychain provides the credentials; nil means anonymous. A poller keeps the keychain
	// of the watch that started it, which is why equal IDs must mean equal credentials.
	Keychain authn.Keychain
}

// Watch is one subscription: a subscriber watches Ref with Credentials.
type Watch struct {
	Ref         string
	Credentials Credentials
}

// WatcherOptions configure NewWatcher.
type WatcherOptions struct {
	// Interval is the time between two checks of a reference; 0 means DefaultInterval.
	Interval time.Duration
	// Jitter is the fraction of Interval by which a wait varies at random, up or down;
	// 0 means DefaultJitter, a negative value means none, and it is at most 0.5.
	Jitter float64
	// MaxBackoff bounds the wait after consecutive errors (never below Interval); 0 means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Resolver resolves the references. It is required.
	Resolver Resolver
	// Now is the clock of Result.CheckedAt and of Retry-After waits; nil means time.Now.
	Now func() time.Time
}

// Watcher runs one poller per unique (reference, credentials ID) and tells the
// subscribers of a poller when its result changes.
type Watcher struct {
	opts   WatcherOptions
	notify func(subscriber string)

	mu      sync.Mutex
	subs    map[string][]pollerKey // the pollers of each subscriber
	pollers map[pollerKey]*poller
	ctx     context.Context // the context of Run, nil when Run is not running
	running sync.WaitGroup
}

// pollerKey is what makes two watches share a poller.
type pollerKey struct {
	ref           string
	credentialsID string
}

// NewWatcher returns a Watcher. It calls notify, from a poller goroutine, with every
// subscriber whose watched result changed (a new digest, or an error that appeared,
// changed or cleared), and once after the first check of a newly added watch; when a
// subscriber joins a poller that has already checked, right after it joins. notify must
// not block. It panics without opts.Resolver.
func NewWatcher(opts WatcherOptions, notify func(subscriber string)) *Watcher {
	if opts.Resolver == nil {
		panic("images.NewWatcher: WatcherOptions.Resolver is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Jitter == 0 {
		opts.Jitter = DefaultJitter
	}
	opts.Jitter = min(max(opts.Jitter, 0), maxJitter)
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.Interval)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if notify == nil {
		notify = func(string) {}
	}
	return &Watcher{opts: opts, notify: notify, subs: map[string][]pollerKey{}, pollers: map[pollerKey]*poller{}}
}

// SetWatches replaces the watches of a subscriber; an empty list removes the subscriber.
// Pollers start for references nobody watched yet (at once when Run is running, else
// when it starts), and stop when their last subscriber leaves. Watches with the same
// reference and credentials ID count once. It is safe for concurrent use.
func (w *Watcher) SetWatches(subscriber string, watches []Watch) {
	w.mu.Lock()
	defer w.mu.Unlock()

	keep := map[pollerKey]bool{}
	keys := make([]pollerKey, 0, len(watches))
	for _, watch := range watches {
		key := pollerKey{ref: watch.Ref, credentialsID: watch.Credentials.ID}
		if keep[key] {
			continue
		}
		keep[key] = true
		keys = append(keys, key)

		p, ok := w.pollers[key]
		if !ok {
			p = newPoller(key, watch.Credentials.Keychain)
			w.pollers[key] = p
			if w.ctx != nil {
				w.start(p)
			}
		}
		if _, ok := p.subs[subscriber]; !ok {
			p.subs[subscriber] = 0
			if p.gen > 0 {
				p.signal(p.wake)
			}
		}
	}
	for _, key := range w.subs[subscriber] {
		if !keep[key] {
			w.leave(subscriber, key)
		}
	}
	if len(keys) == 0 {
		delete(w.subs, subscriber)
	} else {
		w.subs[subscriber] = keys
	}
}

// leave removes a subscriber from a poller, and stops the poller when it was the last.
// The caller holds w.mu.
func (w *Watcher) leave(subscriber string, key pollerKey) {
	p, ok := w.pollers[key]
	if !ok {
		return
	}
	delete(p.subs, subscriber)
	if len(p.subs) == 0 {
		delete(w.pollers, key)
		if p.cancel != nil {
			p.cancel()
		}
	}
}

// Latest returns the latest result for ref under the credentials ID, if a check has
// finished.
func (w *Watcher) Latest(ref, credentialsID string) (Result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pollers[pollerKey{ref: ref, credentialsID: credentialsID}]
	if !ok || p.gen == 0 {
		return Result{}, false
	}
	return p.result, true
}

// Poke makes every poller of ref check now, for a registry's push webhook, and returns
// how many pollers it poked. A reference matches when it names the same tag, however it
// is spelled (nginx and index.docker.io/library/nginx:latest are one tag). A poller
// waiting for the end of a Retry-After checks when that is over.
func (w *Watcher) Poke(ref string) int {
	want := canonicalRef(ref)
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.pollers {
		if p.canonical == want {
			p.signal(p.poke)
			n++
		}
	}
	return n
}

// Run starts the pollers and blocks until ctx is done; then it stops them and waits for
// them to end. SetWatches works before and during Run. Run is not to be called again
// before it returns.
func (w *Watcher) Run(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	for _, p := range w.pollers {
		w.start(p)
	}
	w.mu.Unlock()

	<-ctx.Done()

	w.mu.Lock()
	w.ctx = nil
	for _, p := range w.pollers {
		p.cancel = nil // ended with ctx; a later Run starts them again
	}
	w.mu.Unlock()
	w.running.Wait()
}

// start runs a poller until it is stopped or Run ends. The caller holds w.mu.
func (w *Watcher) start(p *poller) {
	ctx, cancel := context.WithCancel(w.ctx)
	p.cancel = cancel
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		defer cancel()
		w.poll(ctx, p)
	}()
}

// publish records the result of a check, and returns the subscribers to notify: all of
// them when the result changed, and those who joined since the last notification. It
// records nothing for a poller that was stopped meanwhile.
func (w *Watcher) publish(p *poller, res *Result) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pollers[p.key] != p {
		return nil
	}
	if res != nil {
		if p.gen == 0 || changed(p.result, *res) {
			p.gen++
		}
		p.result = *res
	}
	var notify []string
	for sub, seen := range p.subs {
		if p.gen > 0 && seen != p.gen {
			p.subs[sub] = p.gen
			notify = append(notify, sub)
		}
	}
	return notify
}

// changed reports whether a new result is news to the subscribers.
func changed(old, cur Result) bool {
	if old.Digest != cur.Digest || (old.Err == nil) != (cur.Err == nil) {
		return true
	}
	return old.Err != nil && old.Err.Error() != cur.Err.Error()
}
