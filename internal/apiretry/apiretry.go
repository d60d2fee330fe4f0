// Package apiretry tells an apiserver answer that may well succeed when asked again from a
// refusal, and asks again: the one home of that rule for the deployer, the strategies and
// the hook pods.
package apiretry

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Limit bounds how long Do keeps trying one request.
const Limit = 2 * time.Minute

// IsTransient reports whether err is an apiserver answer that may well succeed when asked
// again: a timeout, too many requests, an internal error, an unavailable server, a dropped
// connection, an HTTP/2 stream that the server reset (a busy apiserver resets the stream
// of a request that ran past its own timeout), or a denial by an RBAC authorizer that has
// not read the roles yet (RBACWarmingUp). Other refusals (forbidden, invalid, not found,
// conflict) are not.
func IsTransient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || isStreamReset(err) || WarmingUp(err)
}

// WarmingUp reports whether err is a refusal that a just-started apiserver gives until it
// has read its own configuration: a denial by an RBAC authorizer that has not read the
// roles yet (RBACWarmingUp), or an admission policy or binding that it could not
// configure yet (AdmissionWarmingUp).
func WarmingUp(err error) bool {
	return RBACWarmingUp(err) || AdmissionWarmingUp(err)
}

// AdmissionWarmingUp reports whether err is the denial of a ValidatingAdmissionPolicy or
// binding that the apiserver could not configure, such as a policy whose paramKind is a
// CRD that a just-restarted apiserver has not mapped yet ("failed to configure policy:
// failed to find resource referenced by paramKind", seen in make chaos after apiserver
// restarts). The apiserver sends it as a Forbidden, or with reason Invalid (422): its
// dispatcher gives a denial without a reason of its own that reason. So only the message
// tells.
func AdmissionWarmingUp(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "failed to configure policy") || strings.Contains(msg, "failed to configure binding")
}

// bootstrapRoleMissing matches the RBAC authorizer's note on a binding whose role it could
// not find, for one of the system: ClusterRoles that every apiserver creates at start.
var bootstrapRoleMissing = regexp.MustCompile(`clusterrole\.rbac\.authorization\.k8s\.io "system:[^"]*" not found`)

// RBACWarmingUp reports whether err is a denial (a Forbidden, or a refused exec upgrade
// that only says so in its text) from an apiserver whose RBAC authorizer has not read the
// ClusterRoles yet: it has just started (make chaos saw rollouts fail on "RBAC:
// [clusterrole.rbac.authorization.k8s.io "system:service-account-issuer-discovery" not
// found, ...]" a few seconds after an apiserver restart). The system: roles are created by
// the apiserver itself at every start, so a binding to one that is "not found" means a
// cold cache, not a missing permission. A plain denial has no such note and stays a
// refusal.
func RBACWarmingUp(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "forbidden") && strings.Contains(msg, "RBAC: ") && bootstrapRoleMissing.MatchString(msg)
}

// isStreamReset recognises an HTTP/2 stream error by its text: both HTTP/2 clients that
// client-go may use (the standard library's and golang.org/x/net's) write
// "stream error: stream ID <n>; <code>", and neither type is exported by the first.
func isStreamReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "stream error: stream ID ")
}

// Do calls fn until it succeeds, fails with an error that is not transient (IsTransient),
// ctx is done, or Limit has passed, backing off from 200 ms to 5 s between calls. A busy
// or restarting apiserver answers some requests with a timeout or a refused connection;
// one such answer must not fail a rollout. It returns fn's last error.
func Do(ctx context.Context, fn func() error) error {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     200 * time.Millisecond,
		RandomizationFactor: 0.2,
		Multiplier:          2,
		MaxInterval:         5 * time.Second,
		MaxElapsedTime:      Limit,
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
