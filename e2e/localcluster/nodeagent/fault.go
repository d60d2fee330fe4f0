package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// Node faults. One agent serves every node, so "the kubelet of stagehand-node-2 died" is
// played by stopping that node's part of the agent (its gate, gate.go), and "the machine
// is gone" by also killing its containers. The other nodes go on as before.

// node is the kubelet part of one Node that the agent serves.
type node struct {
	name string
	gate *nodeGate

	faultMu sync.Mutex // serialises begin, StopNode, StartNode and LoseNode
	port    int32      // the kubelet port; 0 until Run registered the node
}

// begin lets the node run for the first time, once Run has registered it.
func (n *node) begin(ctx context.Context, port int32) {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.port = port
	n.gate.open(ctx)
}

// lockNode locks the named node for a fault, and returns it with Run's context. It fails
// when the node is not one of the agent's or not registered yet, or when the agent does
// not run. The caller unlocks n.faultMu.
func (a *Agent) lockNode(name string) (*node, context.Context, error) {
	n := a.nodes[name]
	if n == nil {
		return nil, nil, fmt.Errorf("node %s is not served by this node agent", name)
	}
	a.mu.Lock()
	ctx, stopping := a.ctx, a.stopping
	a.mu.Unlock()
	if ctx == nil || ctx.Err() != nil || stopping {
		return nil, nil, errors.New("the node agent is not running")
	}
	n.faultMu.Lock()
	if n.port == 0 {
		n.faultMu.Unlock()
		return nil, nil, fmt.Errorf("node %s is not registered yet", name)
	}
	return n, ctx, nil
}

// StopNode stops the node's part of the agent as if its kubelet had died: from its return
// on, the node's Lease is not renewed, its Node status and its pods' statuses are not
// updated, no container of it starts (nor restarts), and deletions of its pods are not
// acted on. Its containers keep running. The agent still watches the node's pods, so that
// StartNode knows what changed meanwhile. Stopping a stopped node does nothing.
func (a *Agent) StopNode(name string) error {
	n, _, err := a.lockNode(name)
	if err != nil {
		return err
	}
	defer n.faultMu.Unlock()
	if n.gate.shut() {
		a.log.WithField("node", name).Info("node stopped: no more heartbeats, status updates or container starts")
	}
	return nil
}

// LoseNode stops the node as StopNode does and kills every container of it at once, with
// SIGKILL, as when the machine is gone: no grace period, no status, no API call. Its
// containers stay dead until StartNode, which starts them again as their restart policy
// says. The Node object stays.
func (a *Agent) LoseNode(name string) error {
	n, _, err := a.lockNode(name)
	if err != nil {
		return err
	}
	defer n.faultMu.Unlock()
	n.gate.shut() // from here on no container of the node starts
	killed := a.killContainers(n)
	a.log.WithFields(map[string]any{"node": name, "containers": killed}).Info("node lost: its containers were killed")
	return nil
}

// StartNode restarts the node's part of the agent, as a kubelet that starts again: it
// registers the Node (creates it if it was deleted, reports it Ready), then resumes the
// Lease and the status updates, and resyncs the node's pods: it reports the containers that
// still run, stops and deletes the pods that were deleted meanwhile, and starts new pods
// and the containers that ended meanwhile (as their restart policy says). Starting a
// running node does nothing.
func (a *Agent) StartNode(ctx context.Context, name string) error {
	n, runCtx, err := a.lockNode(name)
	if err != nil {
		return err
	}
	defer n.faultMu.Unlock()
	if n.gate.running() {
		return nil
	}
	if err := a.registerNode(ctx, name, n.port); err != nil {
		return err
	}
	n.gate.open(runCtx)
	a.log.WithField("node", name).Info("node started again")
	return nil
}

// killContainers SIGKILLs the container processes of the node's pods and ends their
// simulated containers. It reports how many containers it ended.
func (a *Agent) killContainers(n *node) int {
	a.mu.Lock()
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		if w.gate == n.gate {
			workers = append(workers, w)
		}
	}
	a.mu.Unlock()
	killed := 0
	for _, w := range workers {
		killed += w.kill()
	}
	return killed
}

// kill ends every container of the pod that runs, at once: SIGKILL to a process
// container's whole group, shim included, and the end of a simulated one (exit code 137,
// as for SIGKILL). The container goroutines record the ends; nothing is reported while
// the node is stopped.
func (w *podWorker) kill() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	killed := 0
	for _, c := range w.ctrs {
		switch {
		case c.proc != nil:
			c.proc.signal(syscall.SIGKILL)
			killed++
		case c.run != nil && c.run.simulated && c.status.State.Running != nil:
			c.run.kill()
			killed++
		}
	}
	return killed
}
