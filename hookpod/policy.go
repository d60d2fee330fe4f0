package hookpod

import (
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Decision is what a failed hook attempt does to the rollout.
type Decision string

const (
	// DecisionIgnore lets the rollout go on (failurePolicy Ignore).
	DecisionIgnore Decision = "Ignore"
	// DecisionRetry starts another attempt after the backoff.
	DecisionRetry Decision = "Retry"
	// DecisionAbort stops the rollout (Abort, or a Retry whose attempts or deadline ran out).
	DecisionAbort Decision = "Abort"
)

// Decide is the failure policy of a hook after its attempt-th attempt (from 1) failed.
// fits says whether the next attempt, after its backoff, still starts before the
// deployer's deadline.
func Decide(policy v1alpha1.LifecycleHookFailurePolicy, attempt, maxAttempts int32, fits bool) Decision {
	switch policy {
	case v1alpha1.LifecycleHookFailurePolicyIgnore:
		return DecisionIgnore
	case v1alpha1.LifecycleHookFailurePolicyRetry:
		if attempt < maxAttempts && fits {
			return DecisionRetry
		}
	}
	// Abort, an exhausted Retry, and an unknown policy (admission refuses it): stop.
	return DecisionAbort
}

// MaxAttempts is how many attempts a hook gets: retry.maxAttempts (defaulted) for a Retry
// hook, 1 otherwise.
func MaxAttempts(hook *v1alpha1.LifecycleHook) int32 {
	if hook.FailurePolicy != v1alpha1.LifecycleHookFailurePolicyRetry {
		return 1
	}
	if hook.Retry == nil || hook.Retry.MaxAttempts < 1 {
		return v1alpha1.DefaultRetryMaxAttempts
	}
	return hook.Retry.MaxAttempts
}

// NewBackOff is the wait between the attempts of a Retry hook: exponential from
// retry.backoff.initialDelaySeconds, doubling, capped at maxDelaySeconds, without
// randomization (a hook is one pod, so there is no herd to spread). It never stops by
// itself: maxAttempts and the deadline bound the attempts.
func NewBackOff(retry *v1alpha1.RetryParams) backoff.BackOff {
	initial, maxDelay := v1alpha1.DefaultRetryInitialDelay, v1alpha1.DefaultRetryMaxDelay
	if retry != nil && (retry.Backoff.InitialDelaySeconds != 0 || retry.Backoff.MaxDelaySeconds != 0) {
		initial, maxDelay = retry.Backoff.InitialDelaySeconds, max(retry.Backoff.MaxDelaySeconds, retry.Backoff.InitialDelaySeconds)
	}
	b := &backoff.ExponentialBackOff{
		InitialInterval:     time.Duration(initial) * time.Second,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         time.Duration(maxDelay) * time.Second,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	return b
}

// BackOffSeries is the first n waits of NewBackOff(retry): the wait before attempt 2,
// before attempt 3, and so on.
func BackOffSeries(retry *v1alpha1.RetryParams, n int) []time.Duration {
	b := NewBackOff(retry)
	series := make([]time.Duration, n)
	for i := range series {
		series[i] = b.NextBackOff()
	}
	return series
}

// AbortError is a hook that stops the rollout: failurePolicy Abort, or a Retry hook whose
// attempts or deadline ran out.
type AbortError struct {
	// Stage is pre, mid or post.
	Stage string
	// Policy is the hook's failurePolicy.
	Policy v1alpha1.LifecycleHookFailurePolicy
	// Attempts is how many attempts ran.
	Attempts int32
	// OutOfTime is true when a Retry hook stopped because the deployer's deadline left no
	// room for another attempt.
	OutOfTime bool
	// Last is the last attempt's failure: a *PodFailedError or an *ExecFailedError.
	Last Failure
}

// Failure is one failed attempt of a hook.
type Failure interface {
	error
	// summary says what failed and how, in one sentence.
	summary() string
	// advice says where to look and what to fix, with the output's tail.
	advice() string
	// text is the short form for events and progress lines ("exit 1").
	text() string
}

func (e *AbortError) Error() string {
	how := fmt.Sprintf("failurePolicy %s", e.Policy)
	if e.Policy == v1alpha1.LifecycleHookFailurePolicyRetry {
		how = fmt.Sprintf("after %d attempts, failurePolicy Retry", e.Attempts)
		if e.OutOfTime {
			how += "; the deployer's activeDeadlineSeconds leaves no time for another"
		}
	}
	return fmt.Sprintf("%s (%s); %s", e.Last.summary(), how, e.Last.advice())
}

func (e *AbortError) Unwrap() error { return e.Last }

// attemptNote is " (attempt k of n)" when the hook may run more than once.
func attemptNote(attempt, maxAttempts int32) string {
	if maxAttempts <= 1 {
		return ""
	}
	return fmt.Sprintf(" (attempt %d of %d)", attempt, maxAttempts)
}
