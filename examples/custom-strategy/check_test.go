package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/strategies"
)

// lines collects what a check prints.
type lines []string

func (l *lines) printf(format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

// server answers every request with status after delay, and counts the requests.
func server(t *testing.T, status int, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestCheckRun(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		delay    time.Duration
		noURL    bool
		wantErr  string // "" when the check passes
		wantHits int32
		wantLine string
	}{
		{name: "200 passes at once", status: http.StatusOK, wantHits: 1, wantLine: "Canary check passed: GET "},
		{name: "204 passes", status: http.StatusNoContent, wantHits: 1, wantLine: "answered 204 No Content"},
		{name: "500 fails after every attempt", status: http.StatusInternalServerError, wantHits: 3,
			wantErr: "did not answer 2xx in 3 attempts; the last one: GET ", wantLine: "Canary check attempt 3 of 3 failed"},
		{name: "a slow answer times out", status: http.StatusOK, delay: time.Second, wantHits: 3,
			wantErr: "timeout 50ms", wantLine: "Canary check attempt 1 of 3 failed"},
		{name: "no URL skips the check", noURL: true, wantLine: "Canary check skipped: CHECK_URL is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := server(t, tt.status, tt.delay)
			check := Check{URL: srv.URL + "/healthz", Timeout: 50 * time.Millisecond, Attempts: 3, Interval: time.Millisecond}
			if tt.noURL {
				check.URL = ""
			}
			var out lines
			err := check.Run(context.Background(), srv.Client(), out.printf)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				var failed *CheckFailedError
				require.ErrorAs(t, err, &failed)
				assert.Equal(t, 3, failed.Attempts)
				assert.Contains(t, err.Error(), tt.wantErr)
			}
			assert.Equal(t, tt.wantHits, hits.Load())
			assert.Contains(t, strings.Join(out, "\n"), tt.wantLine)
		})
	}
}

func TestCheckRunStopsWhenCancelled(t *testing.T) {
	srv, hits := server(t, http.StatusInternalServerError, 0)
	ctx, cancel := context.WithCancel(context.Background())
	check := Check{URL: srv.URL, Timeout: time.Second, Attempts: 5, Interval: time.Hour}
	var out lines
	done := make(chan error, 1)
	go func() { done <- check.Run(ctx, srv.Client(), out.printf) }()
	require.Eventually(t, func() bool { return hits.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		var failed *CheckFailedError
		assert.NotErrorAs(t, err, &failed, "a cancelled check is not a failed one")
	case <-time.After(5 * time.Second):
		t.Fatal("the check did not stop when its context was cancelled")
	}
}

func TestLoadCheck(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		t.Setenv("CHECK_URL", "http://canary.example/healthz")
		c, err := LoadCheck()
		require.NoError(t, err)
		assert.Equal(t, Check{URL: "http://canary.example/healthz", Timeout: 5 * time.Second, Attempts: 3, Interval: 2 * time.Second}, c)
	})
	t.Run("invalid", func(t *testing.T) {
		t.Setenv("CHECK_ATTEMPTS", "0")
		_, err := LoadCheck()
		var invalid *strategies.InvalidError
		require.ErrorAs(t, err, &invalid)
		assert.Contains(t, err.Error(), "CHECK_ATTEMPTS")
	})
	t.Run("unparsable", func(t *testing.T) {
		t.Setenv("CHECK_TIMEOUT", "soon")
		_, err := LoadCheck()
		var invalid *strategies.InvalidError
		require.ErrorAs(t, err, &invalid)
	})
}
