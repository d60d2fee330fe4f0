package hookpod_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

func TestDecide(t *testing.T) {
	const (
		abort  = v1alpha1.LifecycleHookFailurePolicyAbort
		retry  = v1alpha1.LifecycleHookFailurePolicyRetry
		ignore = v1alpha1.LifecycleHookFailurePolicyIgnore
	)
	tests := []struct {
		name        string
		policy      v1alpha1.LifecycleHookFailurePolicy
		attempt     int32
		maxAttempts int32
		fits        bool
		want        hookpod.Decision
	}{
		{name: "abort", policy: abort, attempt: 1, maxAttempts: 1, fits: true, want: hookpod.DecisionAbort},
		{name: "ignore", policy: ignore, attempt: 1, maxAttempts: 1, fits: true, want: hookpod.DecisionIgnore},
		{name: "ignore past the deadline", policy: ignore, attempt: 1, maxAttempts: 1, fits: false, want: hookpod.DecisionIgnore},
		{name: "retry with attempts left", policy: retry, attempt: 1, maxAttempts: 3, fits: true, want: hookpod.DecisionRetry},
		{name: "retry, second of three", policy: retry, attempt: 2, maxAttempts: 3, fits: true, want: hookpod.DecisionRetry},
		{name: "retry exhausted", policy: retry, attempt: 3, maxAttempts: 3, fits: true, want: hookpod.DecisionAbort},
		{name: "retry out of time", policy: retry, attempt: 1, maxAttempts: 3, fits: false, want: hookpod.DecisionAbort},
		{name: "unknown policy stops", policy: "Sometimes", attempt: 1, maxAttempts: 3, fits: true, want: hookpod.DecisionAbort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hookpod.Decide(tt.policy, tt.attempt, tt.maxAttempts, tt.fits))
		})
	}
}

func TestMaxAttempts(t *testing.T) {
	assert.Equal(t, int32(1), hookpod.MaxAttempts(&v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort}))
	assert.Equal(t, int32(1), hookpod.MaxAttempts(&v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore}))
	assert.Equal(t, v1alpha1.DefaultRetryMaxAttempts, hookpod.MaxAttempts(&v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry}))
	assert.Equal(t, int32(5), hookpod.MaxAttempts(&v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry,
		Retry: &v1alpha1.RetryParams{MaxAttempts: 5}}))
}

func TestBackOffSeries(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		retry *v1alpha1.RetryParams
		want  []time.Duration
	}{
		{name: "defaults", want: []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}},
		{name: "doubling to the cap", retry: &v1alpha1.RetryParams{Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: 2, MaxDelaySeconds: 10}},
			want: []time.Duration{2 * s, 4 * s, 8 * s, 10 * s, 10 * s, 10 * s, 10 * s, 10 * s}},
		{name: "no wait", retry: &v1alpha1.RetryParams{Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: 0, MaxDelaySeconds: 5}},
			want: make([]time.Duration, 8)},
		{name: "flat", retry: &v1alpha1.RetryParams{Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: 3, MaxDelaySeconds: 3}},
			want: []time.Duration{3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s, 3 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hookpod.BackOffSeries(tt.retry, 8))
		})
	}
}

func TestAbortErrorMessage(t *testing.T) {
	failed := &hookpod.PodFailedError{Pod: "web-3-hook-pre-3", ExitCode: 1, Reason: "Error", LogTail: []string{"migrating", "boom"}}
	err := &hookpod.AbortError{Stage: "pre", Policy: v1alpha1.LifecycleHookFailurePolicyRetry, Attempts: 3, Last: failed}
	msg := err.Error()
	assert.Contains(t, msg, "hook pod web-3-hook-pre-3 failed with exit code 1")
	assert.Contains(t, msg, "after 3 attempts")
	assert.Contains(t, msg, "kubectl logs web-3-hook-pre-3")
	assert.True(t, strings.HasSuffix(msg, "migrating\nboom"), "the log tail comes last: %q", msg)
	assert.ErrorIs(t, err, failed)

	abort := (&hookpod.AbortError{Stage: "pre", Policy: v1alpha1.LifecycleHookFailurePolicyAbort, Attempts: 1,
		Last: &hookpod.PodFailedError{Pod: "p", ExitCode: -1, Message: "deleted"}}).Error()
	assert.Contains(t, abort, "failurePolicy Abort")
	assert.NotContains(t, abort, "exit code")
}
