package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// check reports nil once a component is healthy.
type check func(context.Context) error

// stoppable is something a wait watches: exitErr is non-nil once it has stopped.
type stoppable interface {
	exitErr() error
	logFile() string
}

func (p *process) logFile() string { return p.logPath }

// stoppedError says that name stopped early and shows the end of its log.
func stoppedError(name string, err error, logPath string) error {
	tail := logTail(logPath, 10)
	if tail == "" {
		return fmt.Errorf("%s stopped (%w); its log %s is empty", name, err, logPath)
	}
	return fmt.Errorf("%s stopped (%w); see %s, which ends with:\n%s", name, err, logPath, tail)
}

func (p *process) exitErr() error {
	done, err := p.exited()
	if !done {
		return nil
	}
	if err == nil {
		err = errors.New("exit status 0")
	}
	return stoppedError(p.name, err, p.logPath)
}

// launch starts one component of the cluster and waits until healthy passes (see
// launchProcess).
func (c *Cluster) launch(ctx context.Context, name, binary string, timeout time.Duration,
	prepare func(attempt int) ([]string, check, error)) error {
	p, err := launchProcess(ctx, c.layout, c.opts.Detach, c.log, name, binary, timeout, prepare)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// launchProcess starts one process and waits until healthy passes, or until it or one of
// watch stops. prepare picks the ports and returns the arguments and the health check for
// one attempt. When the process fails because a port was taken in the meantime,
// launchProcess tries again with new ports.
func launchProcess(ctx context.Context, l layout, detach bool, log *logrus.Entry, name, binary string,
	timeout time.Duration, prepare func(attempt int) ([]string, check, error), watch ...stoppable) (*process, error) {
	for attempt := 1; ; attempt++ {
		args, healthy, err := prepare(attempt)
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", name, err)
		}
		logOffset := fileSize(l.logFile(name))
		began := time.Now()
		p, err := startProcess(l, name, detach, binary, args)
		if err != nil {
			return nil, err
		}
		err = waitUntil(ctx, name+" to become healthy", timeout, healthy, append([]stoppable{p}, watch...)...)
		if err == nil {
			log.WithFields(map[string]any{"pid": p.pid, "took": time.Since(began).Round(time.Millisecond)}).
				Infof("Started %s", name)
			return p, nil
		}
		if stopErr := p.stop(); stopErr != nil {
			log.WithError(stopErr).Warnf("Stopping %s after a failed start", name)
		}
		if attempt >= launchAttempts || !portTakenSince(p.logPath, logOffset) {
			return nil, err
		}
		log.WithField("attempt", attempt).Warnf("A port of %s was taken meanwhile; retrying on new ports", name)
	}
}

// waitFor polls healthy until it passes, the timeout passes, or a watched thing stops.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, healthy check,
	watch ...*process) error {
	watched := make([]stoppable, len(watch))
	for i, p := range watch {
		watched[i] = p
	}
	return waitUntil(ctx, what, timeout, healthy, watched...)
}

func waitUntil(parent context.Context, what string, timeout time.Duration, healthy check, watch ...stoppable) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, w := range watch {
			if err := w.exitErr(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		last := healthy(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, parent.Err())
			}
			return fmt.Errorf("waiting for %s: gave up after %s (last check: %v)%s",
				what, timeout, last, logHints(watch))
		case <-tick.C:
		}
	}
}

// logHints points at the logs of the watched processes.
func logHints(watch []stoppable) string {
	var b strings.Builder
	for _, w := range watch {
		fmt.Fprintf(&b, "; see %s", w.logFile())
	}
	return b.String()
}

// portTakenSince reports whether the log, past offset, says that a port was already in use.
func portTakenSince(path string, offset int64) bool {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return false
	}
	return strings.Contains(string(data[offset:]), "address already in use")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
