package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, unsorted
	}
	tests := []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{name: "none", xs: nil, q: 99, want: 0},
		{name: "one", xs: []float64{7}, q: 99, want: 7},
		{name: "p50 of 1..100", xs: hundred, q: 50, want: 50},
		{name: "p99 of 1..100", xs: hundred, q: 99, want: 99},
		{name: "max", xs: hundred, q: 100, want: 100},
		{name: "p99 of ten is the largest", xs: []float64{5, 1, 9, 3, 7, 2, 8, 4, 6, 10}, q: 99, want: 10},
		{name: "p50 of four is the second", xs: []float64{4, 1, 3, 2}, q: 50, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, percentile(tt.xs, tt.q))
		})
	}
	assert.Equal(t, float64(100), hundred[0], "percentile must not sort its input in place")
}

func TestCPUOf(t *testing.T) {
	// pid (comm with spaces) state ppid ... utime=250 stime=50 (fields 14 and 15)
	stat := "1234 (stagehand deployer) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 0 0"
	assert.InDelta(t, 3.0, cpuOf(stat), 1e-9)
	assert.Zero(t, cpuOf("garbage"))
}

func TestKBOf(t *testing.T) {
	assert.Equal(t, int64(24576), kbOf("\t   24576 kB"))
}

func TestTrackerCountsEachNameOnceAndClosesWhenAllEnded(t *testing.T) {
	tr := newTracker(2)
	t0 := time.Now()
	assert.False(t, tr.mark("a", 1, t0))
	assert.False(t, tr.mark("a", 2, t0.Add(time.Second)), "a second end of the same name is ignored")
	assert.False(t, tr.mark("b", 0, t0), "no end state yet")
	assert.True(t, tr.mark("b", 2, t0.Add(2*time.Second)))
	select {
	case <-tr.all:
	default:
		require.Fail(t, "the tracker did not close after every name ended")
	}
	last, done, failed := tr.result()
	assert.Equal(t, t0.Add(2*time.Second), last)
	assert.Equal(t, 1, done)
	assert.Equal(t, 1, failed)
}
