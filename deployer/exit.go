package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// maxTerminationMessage keeps the message under the kubelet's 4 KiB limit.
const maxTerminationMessage = 3500

// Failure is the error a custom flow returns to end its rollout with a reason and an exit
// code of its own, e.g. &Failure{Reason: "CanaryCheckFailed", Message: "..."}. The message
// says what failed and what to do; it becomes the termination message.
type Failure struct {
	// Reason is an UpperCamelCase reason; empty means Failed.
	Reason string
	// Message is the termination message.
	Message string
	// Code is the exit code; 0 means ExitFailed (a Failure never completes a rollout).
	Code v1alpha1.DeployerExitCode
	// Err is the underlying error, if any, for errors.Is and errors.As.
	Err error
}

func (f *Failure) Error() string { return f.Message }

// Unwrap returns the underlying error.
func (f *Failure) Unwrap() error { return f.Err }

// Outcome maps the error a rollout ended with to its exit code and reason. It is the only
// place where errors become exit codes:
//
//	nil                                    0 Completed
//	strategies.ErrUntilReached             0 Completed (stopped at --until)
//	strategies.ErrCancelled, ctx cancelled 5 Cancelled
//	*Failure                               its Code (default 1) and Reason (default Failed)
//	*strategies.PodStuckError              1 its Reason, the kubelet's waiting reason
//	                                         (e.g. CreateContainerConfigError)
//	*strategies.TimeoutError               4 TimedOut
//	*strategies.HookFailedError            3 HookFailed
//	*strategies.InvalidError               2 InvalidConfig
//	anything else                          1 Failed
func Outcome(err error) (v1alpha1.DeployerExitCode, string) {
	var (
		failure *Failure
		timeout *strategies.TimeoutError
		hook    *strategies.HookFailedError
		stuck   *strategies.PodStuckError
		invalid *strategies.InvalidError
	)
	switch {
	case err == nil, errors.Is(err, strategies.ErrUntilReached):
		return v1alpha1.ExitComplete, v1alpha1.ReasonCompleted
	case errors.Is(err, strategies.ErrCancelled), errors.Is(err, context.Canceled):
		return v1alpha1.ExitCancelled, v1alpha1.ReasonCancelled
	case errors.As(err, &failure):
		code, reason := failure.Code, failure.Reason
		if code == v1alpha1.ExitComplete {
			code = v1alpha1.ExitFailed
		}
		if reason == "" {
			reason = v1alpha1.ReasonFailed
		}
		return code, reason
	case errors.As(err, &stuck):
		// As a stuck deployer pod does: the waiting reason is the revision's reason.
		if stuck.Reason == "" {
			return v1alpha1.ExitFailed, v1alpha1.ReasonFailed
		}
		return v1alpha1.ExitFailed, stuck.Reason
	case errors.As(err, &timeout):
		return v1alpha1.ExitTimedOut, v1alpha1.ReasonTimedOut
	case errors.As(err, &hook):
		return v1alpha1.ExitHookAborted, v1alpha1.ReasonHookFailed
	case errors.As(err, &invalid):
		return v1alpha1.ExitInvalid, v1alpha1.ReasonInvalidConfig
	}
	return v1alpha1.ExitFailed, v1alpha1.ReasonFailed
}

// TerminationMessageFor is the message of a rollout that ended with err; success is the
// message when err is nil. hooks are the hooks the run finished: the first
// v1alpha1.MaxReportedHooks of them are reported, and the message is shortened by what
// they take, so that the whole stays under the kubelet's limit.
func TerminationMessageFor(err error, success string, hooks ...v1alpha1.HookOutcome) v1alpha1.TerminationMessage {
	_, reason := Outcome(err)
	msg := success
	if err != nil {
		msg = err.Error()
	}
	if len(hooks) > v1alpha1.MaxReportedHooks {
		hooks = hooks[:v1alpha1.MaxReportedHooks]
	}
	budget := maxTerminationMessage
	if len(hooks) > 0 {
		budget -= len(v1alpha1.TerminationMessage{Hooks: hooks}.Encode())
	}
	// A hook failure ends with its log tail: keep the end.
	msg = podstatus.TruncateEnd(msg, budget)
	return v1alpha1.TerminationMessage{Reason: reason, Message: msg, Hooks: hooks}
}

// WriteTerminationMessage writes m as JSON to path (the container's terminationMessagePath,
// or STAGEHAND_TERMINATION_MESSAGE_PATH on the local cluster).
func WriteTerminationMessage(path string, m v1alpha1.TerminationMessage) error {
	if path == "" {
		path = v1alpha1.DefaultTerminationMessagePath
	}
	if err := os.WriteFile(path, []byte(m.Encode()), 0o644); err != nil { //nolint:gosec // read by the kubelet
		return fmt.Errorf("writing the termination message to %s: %w", path, err)
	}
	return nil
}
