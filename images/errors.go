package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// resolveError is the failure to resolve one reference, with a message for a user.
type resolveError struct {
	ref string
	msg string
	err error
}

func (e *resolveError) Error() string { return "resolving " + e.ref + ": " + e.msg }
func (e *resolveError) Unwrap() error { return e.err }

// explain turns an error of go-containerregistry into one that names the image, says
// what the registry answered and, where it helps, what to do. The message has no
// timestamps or durations, so that the same failure reads the same on every check. It
// carries no credentials: go-containerregistry sends them in headers and never puts them
// in its errors, and only the codes and messages of the registry's answer are quoted.
func (r *resolver) explain(ctx context.Context, ref string, tag name.Tag, err error) error {
	registry := tag.RegistryStr()
	var terr *transport.Error
	var uerr *url.Error
	switch {
	case ctx.Err() != nil:
		return &resolveError{ref: ref, msg: ctx.Err().Error(), err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &resolveError{ref: ref, err: err,
			msg: fmt.Sprintf("the registry %s did not answer within %s", registry, r.opts.RequestTimeout)}
	case errors.As(err, &terr):
		return r.explainStatus(ref, registry, terr)
	case errors.As(err, &uerr):
		if wait, ok := RetryAfter(uerr.Err); ok {
			return &retryAfterError{wait: wait, err: &resolveError{ref: ref, err: err,
				msg: fmt.Sprintf("the registry %s asked to wait (Retry-After) for longer than this check may take", registry)}}
		}
		return &resolveError{ref: ref, err: err,
			msg: fmt.Sprintf("cannot reach the registry %s: %v", registry, uerr.Err)}
	}
	return &resolveError{ref: ref, msg: fmt.Sprintf("the registry %s: %v", registry, err), err: err}
}

// explainStatus describes an error status of the registry or of its token service.
func (r *resolver) explainStatus(ref, registry string, terr *transport.Error) error {
	who := "the registry " + registry
	host := registry
	if terr.Request != nil && terr.Request.URL != nil {
		host = terr.Request.URL.Host
		if canonicalHost(host) != canonicalHost(registry) {
			who = fmt.Sprintf("the token service %s of the registry %s", host, registry)
		}
	}
	msg := fmt.Sprintf("%s answered %d %s", who, terr.StatusCode, http.StatusText(terr.StatusCode))
	if len(terr.Errors) > 0 {
		diags := make([]string, 0, len(terr.Errors))
		for _, d := range terr.Errors {
			// The detail is left out: it is free-form, and may echo the request.
			diags = append(diags, fmt.Sprintf("%s: %s", d.Code, d.Message))
		}
		msg += " (" + strings.Join(diags, "; ") + ")"
	}
	switch terr.StatusCode {
	case http.StatusUnauthorized:
		msg += fmt.Sprintf("; check the pull secret for %s", registry)
	case http.StatusForbidden:
		msg += fmt.Sprintf("; check that the pull secret for %s may pull this repository", registry)
	case http.StatusNotFound:
		msg += "; check that the repository and the tag exist"
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if wait := r.transport.gate(host).pausedFor(); wait > 0 {
			msg += "; the next check waits as long as the registry asked (Retry-After)"
			return &retryAfterError{wait: wait, err: &resolveError{ref: ref, msg: msg, err: terr}}
		}
	}
	return &resolveError{ref: ref, msg: msg, err: terr}
}
