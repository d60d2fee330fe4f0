package deferstep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRetryDelayDoublesFromOneSecondUpToThirtySeconds(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, time.Second}, // not an attempt number; the first wait all the same
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{4, 8 * time.Second},
		{5, 16 * time.Second},
		{6, 30 * time.Second}, // 32 s, capped
		{7, 30 * time.Second},
		{100, 30 * time.Second},
	} {
		assert.Equal(t, tc.want, RetryDelay(tc.attempt), "after attempt %d", tc.attempt)
	}
}
