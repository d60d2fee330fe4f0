package deferstep

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The wait between a step's attempts: 1 s, doubling, at most 30 s.
const (
	firstRetryDelay = time.Second
	maxRetryDelay   = 30 * time.Second
)

// RetryDelay is the wait after attempt (from 1) of a step: before an OnFailure step runs
// again, and before a step pod that an exceeded ResourceQuota refused is created again.
// It is 1 s, doubling, at most 30 s, without randomization, built as hookpod.NewBackOff
// builds a hook's; the run's deadline, not a number of attempts, ends the retries.
func RetryDelay(attempt int) time.Duration {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     firstRetryDelay,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         maxRetryDelay,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < attempt && d < maxRetryDelay; i++ {
		d = b.NextBackOff()
	}
	return d
}
