package nodeagent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRestartBackoff(t *testing.T) {
	b := restartBackoff{base: time.Second, max: 5 * time.Second}
	var got []time.Duration
	for range 5 {
		got = append(got, b.next(0))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	// A run that lasted twice the cap starts the series again.
	assert.Equal(t, time.Second, b.next(10*time.Second))
	assert.Equal(t, 2*time.Second, b.next(time.Second))
}
