package nodeagent

import (
	"context"
	"sync"
)

// nodeGate says whether the kubelet part of one node runs. Everything the agent does for
// the node waits on it: the heartbeat before every Lease renewal and Node status update,
// each pod worker before it acts on an event (status, deletion, deadline), and each
// container before it starts. While the node runs, the gate's context lives; stopping the
// node ends it, which aborts the node's API calls under way.
//
// A stopped gate does not stop what already runs: containers keep running, as they do on
// a real node whose kubelet died.
type nodeGate struct {
	mu     sync.RWMutex
	up     chan struct{}   // closed while the node runs
	ctx    context.Context // the current run's; ends when the node stops
	cancel context.CancelFunc
}

func newNodeGate() *nodeGate { return &nodeGate{up: make(chan struct{})} }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// open lets the node run, with a context derived from parent. It reports false when the
// node already ran.
func (g *nodeGate) open(parent context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if isClosed(g.up) {
		return false
	}
	g.ctx, g.cancel = context.WithCancel(parent)
	close(g.up)
	return true
}

// shut stops the node. It returns once no container start is under way (see whileUp); none
// begins until the next open. It reports false when the node was already stopped.
func (g *nodeGate) shut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !isClosed(g.up) {
		return false
	}
	g.cancel()
	g.up = make(chan struct{})
	return true
}

// running reports whether the node runs.
func (g *nodeGate) running() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return isClosed(g.up)
}

// wait blocks until the node runs, and returns the context of that run. It reports false
// when ctx ends first. The returned context may end at any time after: the node stopped
// again.
func (g *nodeGate) wait(ctx context.Context) (context.Context, bool) {
	for ctx.Err() == nil {
		g.mu.RLock()
		up, nodeCtx := g.up, g.ctx
		g.mu.RUnlock()
		if isClosed(up) {
			return nodeCtx, true
		}
		select {
		case <-up:
		case <-ctx.Done():
		}
	}
	return nil, false
}

// whileUp runs f if the node runs, and keeps shut waiting until f returned. It reports
// whether f ran. f must be short and must not wait on the gate.
func (g *nodeGate) whileUp(f func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !isClosed(g.up) {
		return false
	}
	f()
	return true
}
