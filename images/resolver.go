package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Defaults of ResolverOptions.
const (
	DefaultRegistryQPS    = 1.0
	DefaultRegistryBurst  = 5
	DefaultRequestTimeout = 30 * time.Second
)

// Resolver resolves one tag reference to a digest.
type Resolver interface {
	// Resolve returns the digest ("sha256:…") the registry serves for the tag reference
	// ref, authenticating with keychain (nil means anonymous). Its errors name ref and
	// say what the registry answered.
	Resolve(ctx context.Context, ref string, keychain authn.Keychain) (digest string, err error)
}

// ResolverOptions configure NewResolver.
type ResolverOptions struct {
	// Transport carries the requests; nil means remote.DefaultTransport.
	Transport http.RoundTripper
	// RegistryQPS is the rate of requests to one registry host, shared by every
	// resolution; 0 means DefaultRegistryQPS and a negative value means no limit.
	RegistryQPS float64
	// RegistryBurst is the number of requests to one registry host that may go at once;
	// 0 means DefaultRegistryBurst.
	RegistryBurst int
	// Insecure reports whether plain HTTP is allowed for a registry (host or host:port).
	// Loopback registries (localhost, 127.0.0.1, [::1]) always allow it. No other host
	// gets plain HTTP, not even one on a private IP address, for which
	// go-containerregistry would otherwise fall back to it on its own.
	Insecure func(registry string) bool
	// UserAgent is sent with every request; empty means go-containerregistry's.
	UserAgent string
	// RequestTimeout bounds each request once it may be sent (after the wait for the
	// rate limit); 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// NewResolver returns a Resolver that asks registries over HTTP (see the package
// documentation). It is safe for concurrent use, and meant to be shared: its rate limits
// hold across everything it resolves.
func NewResolver(opts ResolverOptions) Resolver {
	if opts.Transport == nil {
		opts.Transport = remote.DefaultTransport
	}
	if opts.RegistryQPS == 0 {
		opts.RegistryQPS = DefaultRegistryQPS
	}
	if opts.RegistryBurst <= 0 {
		opts.RegistryBurst = DefaultRegistryBurst
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	return &resolver{
		opts:      opts,
		transport: newRegistryTransport(opts),
		sessions:  sessions{idle: sessionIdle, byKey: map[sessionKey]*session{}},
	}
}

type resolver struct {
	opts      ResolverOptions
	transport *registryTransport
	sessions  sessions
}

var _ Resolver = &resolver{}

// Resolve asks with HEAD, and with GET where HEAD is not enough (see headFallback).
func (r *resolver) Resolve(ctx context.Context, ref string, keychain authn.Keychain) (string, error) {
	tag, err := parseTag(ref, r.opts.Insecure)
	if err != nil {
		return "", err
	}
	key := sessionKey{keychain: keychain, repository: tag.Context().Name()}
	puller, err := r.sessions.get(key, r.pullerOptions(keychain))
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	desc, err := puller.Head(ctx, tag)
	if err == nil {
		return desc.Digest.String(), nil
	}
	if headFallback(err) {
		got, gerr := puller.Get(ctx, tag)
		if gerr == nil {
			return got.Digest.String(), nil
		}
		err = gerr
	}
	if !sessionSound(err) {
		r.sessions.forget(key, puller)
	}
	return "", r.explain(ctx, ref, tag, err)
}

// pullerOptions are the options of the sessions of a keychain.
func (r *resolver) pullerOptions(keychain authn.Keychain) []remote.Option {
	opts := []remote.Option{
		remote.WithTransport(r.transport),
		// The poller decides when to ask again, honouring Retry-After; retries inside
		// go-containerregistry would not.
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
	}
	if r.opts.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(r.opts.UserAgent))
	}
	if keychain != nil {
		opts = append(opts, remote.WithAuthFromKeychain(keychain))
	}
	return opts
}

// sessionSound reports whether a session still holds after a failure: when the registry
// answered the manifest request with something other than 401 or 403. Otherwise, what
// the session learnt may be what went wrong (the registry now asks for authentication,
// say), and the next check starts afresh.
func sessionSound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.Request == nil || !strings.Contains(terr.Request.URL.Path, "/manifests/") {
		return false
	}
	return terr.StatusCode != http.StatusUnauthorized && terr.StatusCode != http.StatusForbidden
}

// headFallback reports whether a failed HEAD is worth a GET: when the manifest request
// itself was refused with a 4xx other than 408 and 429 (HEAD not allowed, or an error
// whose explanation only a GET body carries), with 501, or when the answer lacked the
// digest or media type. Not on network errors, on 5xx, nor when the version check or
// the token request failed: a GET would go through them again.
func headFallback(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		if terr.Request == nil || terr.Request.Method != http.MethodHead {
			return false
		}
		switch terr.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests:
			return false
		case http.StatusNotImplemented:
			return true
		}
		return terr.StatusCode >= 400 && terr.StatusCode < 500
	}
	var uerr *url.Error
	var paused *pausedError
	return !errors.As(err, &uerr) && !errors.As(err, &paused) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
