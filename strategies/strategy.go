package strategies

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// Strategy carries out one rollout: it moves the replicas from the revision from (nil on
// the first rollout) to the revision to, which ends with desired available pods. It must be
// idempotent: run again for the same revisions, it converges.
type Strategy interface {
	Deploy(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error
}

// ErrCancelled stops a rollout because its context was cancelled: the deployer pod got
// SIGTERM (the rollout was cancelled or superseded).
var ErrCancelled = errors.New("the rollout was cancelled")

// TimeoutError stops a rollout that made no progress within its timeoutSeconds.
type TimeoutError struct {
	// Revision is the ReplicaSet that was waited on.
	Revision string
	// WaitingFor says what was waited for, e.g. "4 pods to be available".
	WaitingFor string
	// Seen describes the counts at the deadline, e.g. "2 available, 4 pods".
	Seen string
	// Selector selects the revision's pods, for the hint in the message.
	Selector string
	// Timeout is how long the wait lasted.
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s: %s waited for %s (seen: %s); see why with kubectl describe pods -l %s, or raise timeoutSeconds",
		e.Timeout, e.Revision, e.WaitingFor, e.Seen, e.Selector)
}

// InvalidError stops a rollout whose inputs or configuration are invalid. Running it
// again changes nothing until the input is fixed.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

// Invalidf returns an InvalidError with a formatted message that says what is wrong and
// what to do.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Message: fmt.Sprintf(format, args...)}
}

// HookFailedError stops a rollout whose hook with failure policy Abort (or an exhausted
// Retry) failed. The hooks issue returns it from HookRunner.Run.
type HookFailedError struct {
	Stage string
	Err   error
}

func (e *HookFailedError) Error() string { return fmt.Sprintf("%s hook failed: %v", e.Stage, e.Err) }

func (e *HookFailedError) Unwrap() error { return e.Err }

// cancelled turns a context error into ErrCancelled, keeping other errors.
func cancelled(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %w", ErrCancelled, err)
	}
	return err
}
