package localcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// Faults for chaos tests: a control-plane component that restarts, a node whose kubelet
// dies, a node that is lost. docs/localcluster.md (Faults) says how each maps to a real
// cluster.

// RestartComponent restarts one control-plane component: etcd, kube-apiserver,
// kube-controller-manager or kube-scheduler. It stops the running process as Stop does
// (SIGTERM, SIGKILL after 10 s), waits down, starts the same binary again with the same
// arguments, so on the same ports and, for etcd, with the same data, and waits until it is
// healthy. After etcd it also waits until the apiserver is ready again. The component's
// clients (the admin client, the node agent, the other components) reconnect by
// themselves. When ctx ends during down, the component is started again at once; ctx
// also bounds the wait for health. One restart runs at a time; Stop stops the new
// process.
func (c *Cluster) RestartComponent(ctx context.Context, name string, down time.Duration) error {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	healthy, timeout, err := c.restartCheck(name)
	if err != nil {
		return err
	}
	old, err := c.liveProcess(name)
	if err != nil {
		return err
	}
	if err := old.stop(); err != nil {
		return fmt.Errorf("restarting %s: stopping it: %w", name, err)
	}
	c.log.WithField("pid", old.pid).Infof("Stopped %s, down for %s", name, down)
	timer := time.NewTimer(down)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	began := time.Now()
	p, err := c.startAgain(old)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	if err := waitUntil(ctx, name+" to become healthy again", timeout, healthy, p); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	if name == etcdName {
		apiserver, err := c.liveProcess(apiserverName)
		if err != nil {
			return err
		}
		err = waitUntil(ctx, "kube-apiserver to be ready after the etcd restart", apiserverTimeout,
			apiserverReady(c.client), apiserver)
		if err != nil {
			return fmt.Errorf("restarting %s: %w", name, err)
		}
	}
	c.log.WithFields(map[string]any{"pid": p.pid, "took": time.Since(began).Round(time.Millisecond)}).
		Infof("Restarted %s", name)
	return nil
}

// restartCheck is the health check of a component that RestartComponent restarts, and how
// long it may take to pass.
func (c *Cluster) restartCheck(name string) (check, time.Duration, error) {
	switch name {
	case etcdName:
		return etcdHealthy(c.state.Ports.EtcdClient), etcdTimeout, nil
	case apiserverName:
		return apiserverReady(c.client), apiserverTimeout, nil
	case controllerManagerName, schedulerName:
		port := c.state.Ports.ControllerManager
		if name == schedulerName {
			port = c.state.Ports.Scheduler
		}
		healthy, err := componentHealthy(c.layout.pki().caCert(), port)
		return healthy, componentTimeout, err
	}
	return nil, 0, fmt.Errorf("RestartComponent restarts %s, %s, %s or %s, not %q",
		etcdName, apiserverName, controllerManagerName, schedulerName, name)
}

// liveProcess is the current process of a component.
func (c *Cluster) liveProcess(name string) (*process, error) {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if c.stopped {
		return nil, errors.New("the local cluster is stopped")
	}
	for _, p := range c.procs {
		if p.name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s does not run in this cluster", name)
}

// startAgain starts a stopped process again with the same binary and arguments, and puts
// it in its place in c.procs, unless Stop began meanwhile.
func (c *Cluster) startAgain(old *process) (*process, error) {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if c.stopped {
		return nil, errors.New("the local cluster was stopped meanwhile")
	}
	i := slices.Index(c.procs, old)
	if i < 0 {
		return nil, fmt.Errorf("%s (pid %d) is no longer one of the cluster's processes", old.name, old.pid)
	}
	p, err := startProcess(c.layout, old.name, c.opts.Detach, old.cmd.Path, old.cmd.Args[1:])
	if err != nil {
		return nil, err
	}
	c.procs[i] = p
	return p, nil
}

// nodeAgent is the in-process node agent that serves the node, for a node fault.
func (c *Cluster) nodeAgent(node string) (*nodeagent.Agent, error) {
	if c.agent == nil {
		return nil, errors.New("node faults need the node agent in this process; this cluster's agent runs detached (Options.Detach)")
	}
	if !slices.Contains(c.NodeNames(), node) {
		return nil, fmt.Errorf("the local cluster has no node %s; its nodes are %v", node, c.NodeNames())
	}
	return c.agent.agent, nil
}

// StopNode stops the node's part of the node agent, as if the node's kubelet had died: no
// Lease renewals, no Node status updates, no pod status updates, no container starts (new
// pods bound to the node wait), and deletions of its pods are not acted on. Its running
// containers keep running. The other nodes go on. Stopping a stopped node does nothing.
func (c *Cluster) StopNode(name string) error {
	a, err := c.nodeAgent(name)
	if err != nil {
		return err
	}
	if err := a.StopNode(name); err != nil {
		return fmt.Errorf("stopping node %s: %w", name, err)
	}
	return nil
}

// StartNode starts the node's part of the node agent again, as a kubelet that restarts:
// it registers the Node again (creates it if it was deleted), resumes its Lease and
// status, and resyncs the pods bound to it: the containers that still run are reported
// Running, the pods deleted meanwhile are stopped and their objects deleted, new pods
// start. It returns once the Node is Ready and free of the not-ready and unreachable
// taints. Starting a running node does nothing.
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	a, err := c.nodeAgent(name)
	if err != nil {
		return err
	}
	if err := a.StartNode(ctx, name); err != nil {
		return fmt.Errorf("starting node %s: %w", name, err)
	}
	return waitUntil(ctx, "node "+name+" to be Ready again", nodesTimeout, nodesReady(c.client, []string{name}), c.agent)
}

// LoseNode loses the node for good, as when its machine is gone: it stops the node as
// StopNode does and kills all of its containers at once (SIGKILL; no status update, no
// API call). The Node object and its pods stay until someone deletes them: delete the
// Node, and the pod garbage collector deletes its pods. Nothing of the node comes back
// unless StartNode is called.
func (c *Cluster) LoseNode(name string) error {
	a, err := c.nodeAgent(name)
	if err != nil {
		return err
	}
	if err := a.LoseNode(name); err != nil {
		return fmt.Errorf("losing node %s: %w", name, err)
	}
	return nil
}
