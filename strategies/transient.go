package strategies

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// TransientRetryLimit bounds how long RetryTransient keeps trying one request.
const TransientRetryLimit = 2 * time.Minute

// IsTransient reports whether err is an apiserver answer that may well succeed when
// asked again: a timeout, too many requests, an internal error, an unavailable server, a
// dropped connection, or an HTTP/2 stream that the server reset (a busy apiserver resets
// the stream of a request that ran past its own timeout). Refusals (forbidden, invalid,
// not found, conflict) are not.
func IsTransient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || isStreamReset(err)
}

// isStreamReset recognises an HTTP/2 stream error by its text: both HTTP/2 clients that
// client-go may use (the standard library's and golang.org/x/net's) write
// "stream error: stream ID <n>; <code>", and neither type is exported by the first.
func isStreamReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "stream error: stream ID ")
}

// RetryTransient calls fn until it succeeds, fails with an error that is not transient
// (IsTransient), ctx is done, or TransientRetryLimit has passed, backing off from 200 ms
// to 5 s between calls. A busy apiserver (thousands of rollouts at once) answers some
// requests with a timeout; one such answer must not fail a rollout. It returns fn's last
// error.
func RetryTransient(ctx context.Context, fn func() error) error {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     200 * time.Millisecond,
		RandomizationFactor: 0.2,
		Multiplier:          2,
		MaxInterval:         5 * time.Second,
		MaxElapsedTime:      TransientRetryLimit,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	var last error
	err := backoff.Retry(func() error {
		last = fn()
		if last == nil || !IsTransient(last) {
			return backoff.Permanent(last)
		}
		return last
	}, backoff.WithContext(b, ctx))
	if err == nil || last == nil {
		return err
	}
	if ctx.Err() != nil && !errors.Is(last, ctx.Err()) {
		return errors.Join(last, ctx.Err())
	}
	return last
}
