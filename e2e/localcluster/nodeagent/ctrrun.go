package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ctrRun is one run of a container: what exec, probes and log readers need.
type ctrRun struct {
	argv      []string // nil for a simulated container
	env       []string
	dir       string
	started   time.Time
	done      chan struct{} // closed when the run ended and its output is in the log
	simulated bool
	killed    chan struct{} // closed by kill: a simulated run ends as if SIGKILLed
	killOnce  sync.Once
}

// kill ends a simulated run as SIGKILL ends a process (LoseNode).
func (r *ctrRun) kill() { r.killOnce.Do(func() { close(r.killed) }) }

// exitCodeKilled is the exit code of a container that SIGKILL ended.
const exitCodeKilled = 128 + int32(syscall.SIGKILL)

// runStart is how the start of a run went.
type runStart struct {
	over    bool  // runOnce is over: the pod stops, or the start failed
	code    int32 // the exit code when the start failed
	ran     bool
	proc    *proc
	sink    *logSink
	started metav1.Time
	probe   *corev1.Probe
}

// runOnce runs c once and waits for it to end. ran is false when ctx ended before the
// container could start. A container starts only while its node runs (see StopNode). A
// simulated container runs until ctx ends or LoseNode kills it, except a simulated init
// container, which completes at once.
func (w *podWorker) runOnce(ctx context.Context, c *ctr) (exitCode int32, ran bool) {
	var run *ctrRun
	var s runStart
	for {
		var ok bool
		if run, ok = w.prepareRun(ctx, c); !ok {
			return 0, false
		}
		if w.gate.whileUp(func() { s = w.startRun(c, run) }) {
			break
		}
		// The node stopped while the run was prepared: prepare it again once the node runs.
	}
	if s.over {
		return s.code, s.ran
	}
	if run.simulated {
		return w.runSimulated(ctx, c, run, s.started)
	}

	probeCtx, stopProbe := context.WithCancel(ctx)
	if s.probe != nil {
		go w.probeReadiness(probeCtx, c, run, s.probe)
	}
	<-s.proc.done
	stopProbe()
	s.sink.close(logDrainTimeout)
	code := s.proc.exitCode()
	reason := reasonCompleted
	if code != 0 {
		reason = reasonError
	}
	msg := w.terminationMessage(c, code)
	w.mu.Lock()
	c.proc = nil
	w.terminateLocked(c, code, reason, msg, s.started)
	w.mu.Unlock()
	close(run.done)
	w.markDirty()
	return code, true
}

// prepareRun prepares a run of c while the node runs, and again every configRetryPeriod
// while that fails, with the container waiting. It reports false when ctx ends first.
func (w *podWorker) prepareRun(ctx context.Context, c *ctr) (*ctrRun, bool) {
	logged := ""
	for {
		if _, ok := w.gate.wait(ctx); !ok {
			return nil, false
		}
		run, err := w.prepare(ctx, c)
		if err == nil {
			return run, true
		}
		if err.Error() != logged {
			logged = err.Error()
			w.log.WithFields(logrus.Fields{"container": c.spec.Name, "reason": configErrorReason(err)}).WithError(err).Info("container waits")
		}
		w.setWaiting(c, configErrorReason(err), err.Error())
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(configRetryPeriod):
		}
	}
}

// startRun starts a prepared run of c (a process, or a simulated container) and reports
// it Running.
func (w *podWorker) startRun(c *ctr, run *ctrRun) runStart {
	if err := os.MkdirAll(filepath.Dir(w.terminationPath(c)), 0o755); err != nil {
		w.log.WithError(err).Warn("creating container directory")
	}
	_ = os.WriteFile(w.terminationPath(c), nil, 0o644)
	w.mu.Lock()
	if w.stopping {
		w.mu.Unlock()
		return runStart{over: true}
	}
	if c.run != nil {
		// A restart: keep the last run's log for previous=true.
		_ = os.Rename(w.logPath(c), w.previousLogPath(c))
		c.status.RestartCount++
		if c.status.State.Terminated != nil {
			c.status.LastTerminationState = c.status.State
		}
	}
	c.run = run
	c.status.ContainerID = "stagehand://" + newID()
	// A simulated run gets an empty log; it keeps no file open.
	sink, err := newLogSink(w.logPath(c))
	var p *proc
	if err == nil && run.simulated {
		sink.close(0)
		sink = nil
	} else if err == nil {
		p, err = w.startProcess(run, sink)
		c.proc = p
	}
	started := metav1.NewTime(run.started.Truncate(time.Second))
	if err != nil {
		w.terminateLocked(c, startExitCode(err), reasonStartError, err.Error(), started)
		w.mu.Unlock()
		if sink != nil {
			sink.close(0)
		}
		close(run.done)
		w.markDirty()
		w.log.WithError(err).WithField("container", c.spec.Name).Warn("container failed to start")
		return runStart{over: true, code: startExitCode(err), ran: true}
	}
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	c.status.Started = ptrTo(true)
	probe := c.spec.ReadinessProbe
	if run.simulated || (c.init && !c.sidecar) {
		probe = nil // simulated containers are ready at once; init containers have no readiness
	}
	c.status.Ready = probe == nil && (!c.init || c.sidecar)
	w.mu.Unlock()
	w.markDirty()
	return runStart{proc: p, sink: sink, started: started, probe: probe}
}

// runSimulated waits for the end of a simulated run: ctx (the pod stops), or kill.
func (w *podWorker) runSimulated(ctx context.Context, c *ctr, run *ctrRun, started metav1.Time) (int32, bool) {
	code, reason := int32(0), reasonCompleted
	if !c.init || c.sidecar {
		select {
		case <-ctx.Done():
		case <-run.killed:
			code, reason = exitCodeKilled, reasonError
		}
	}
	w.mu.Lock()
	w.terminateLocked(c, code, reason, "", started)
	w.mu.Unlock()
	close(run.done)
	w.markDirty()
	return code, true
}
