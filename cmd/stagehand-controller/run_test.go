package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A leader that lost its Lease returns errLostLeadership while the process's context is
// live: serveWhileRunning stops the server and returns it, so that the process exits and
// comes back as a standby (a chaos run once found both replicas waiting forever here).
func TestServeWhileRunningReturnsWhenRunEndsFirst(t *testing.T) {
	ctx := context.Background() // no signal ever comes
	var serverStopped bool
	serve := func(ctx context.Context) (<-chan struct{}, error) {
		done := make(chan struct{})
		go func() {
			<-ctx.Done()
			serverStopped = true
			close(done)
		}()
		return done, nil
	}
	result := make(chan error, 1)
	go func() {
		result <- serveWhileRunning(ctx, serve, func(context.Context) error { return errLostLeadership })
	}()
	select {
	case err := <-result:
		require.ErrorIs(t, err, errLostLeadership)
		assert.True(t, serverStopped, "the server stopped before the return")
	case <-time.After(5 * time.Second):
		t.Fatal("serveWhileRunning still waits after run returned")
	}
}
