package executionhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// newBackOff is the wait between the attempts in one container: 1 s, doubling, at most
// 30 s, without jitter, so that a controller that restarts computes the same waits.
func newBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Second
	b.Multiplier = 2
	b.MaxInterval = 30 * time.Second
	b.RandomizationFactor = 0
	b.MaxElapsedTime = 0 // the hook's deadline bounds the attempts
	b.Reset()
	return b
}

// backoffAfter is the wait before the attempt that follows attempt number n (1-based).
func backoffAfter(n int32) time.Duration {
	b := newBackOff()
	d := b.NextBackOff()
	for i := int32(1); i < n; i++ {
		d = b.NextBackOff()
	}
	return d
}

// run executes one ExecutionHook: a goroutine for each unfinished container, at most
// parallelism at once. It owns the hook's status while it runs: every change is written
// at once, so that a controller that restarts finds the attempts and the outcomes.
type run struct {
	c       *Controller
	cancel  context.CancelFunc
	done    chan struct{}
	stopped chan struct{} // closed when the hook is deleted: in-flight commands are killed

	haltOnce sync.Once

	mu   sync.Mutex
	hook *v1alpha1.ExecutionHook // the latest written, with any change being written

	write sync.Mutex // serialises the changes and their writes (update)
	ended bool       // under write: the hook was ended (endUnwritable)
}

// start runs hook (Running, with its containers in status) until each container has an
// outcome.
func (c *Controller) start(parent context.Context, hook *v1alpha1.ExecutionHook) *run {
	ctx, cancel := context.WithCancel(parent)
	r := &run{c: c, cancel: cancel, done: make(chan struct{}), stopped: make(chan struct{}), hook: hook.DeepCopy()}
	go r.run(ctx)
	return r
}

// stop ends the run of a deleted hook, stops the commands in flight, and waits for it.
func (r *run) stop() {
	r.halt()
	<-r.done
}

// halt ends the run and stops the commands in flight, without waiting.
func (r *run) halt() {
	r.haltOnce.Do(func() {
		close(r.stopped)
		r.cancel()
	})
}

func (r *run) run(ctx context.Context) {
	defer close(r.done)
	defer r.cancel()
	hook := r.snapshot()
	limit := len(hook.Status.HookStatuses)
	if hook.Spec.Parallelism != nil {
		limit = int(*hook.Spec.Parallelism)
	}
	slots := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range hook.Status.HookStatuses {
		if hook.Status.HookStatuses[i].Succeed != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			r.container(ctx, i)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	r.finish(ctx)
}

func (r *run) snapshot() *v1alpha1.ExecutionHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hook.DeepCopy()
}

// container runs the action in container i until it succeeds, fails for good or its
// deadline passes. The deadline counts from the container's first attempt, that is once
// it holds a parallelism slot, and is written with that attempt (containerDeadline).
func (r *run) container(ctx context.Context, i int) {
	hook := r.snapshot()
	deadline := containerDeadline(&hook.Status, i, time.Now())
	command := hook.Status.Command
	noShell := false
	for {
		st := r.snapshot().Status.HookStatuses[i]
		if st.Succeed != nil {
			return
		}
		if st.Attempts > 0 {
			last := st.Timestamp.Time
			if st.Error != nil && st.Error.Timestamp != nil {
				last = st.Error.Timestamp.Time
			}
			next := last.Add(backoffAfter(st.Attempts))
			if !next.Before(deadline) {
				// No attempt starts after the deadline: the container fails when it passes.
				if !sleepUntil(ctx, deadline) {
					return
				}
				r.fail(ctx, i, lastError(st, deadline))
				return
			}
			if !sleepUntil(ctx, next) {
				return
			}
		}
		if !time.Now().Before(deadline) {
			r.fail(ctx, i, lastError(st, deadline))
			return
		}
		if final, herr := r.check(ctx, hook.Namespace, st.PodName, st.ContainerName); herr != nil {
			if final {
				r.fail(ctx, i, herr)
				return
			}
			// Not running yet: an attempt that did not start the command.
			if err := r.startAttempt(ctx, i, deadline, herr); err != nil {
				r.lost(ctx, err)
				return
			}
			r.c.metrics.ExecFinished(string(herr.ErrorType), 0)
			continue
		}
		if err := r.startAttempt(ctx, i, deadline, nil); err != nil {
			r.lost(ctx, err)
			return
		}
		started := time.Now()
		res := r.attempt(ctx, deadline, hook.Namespace, st.PodName, st.ContainerName, command, &noShell)
		if res.abandoned {
			return
		}
		r.c.metrics.ExecFinished(string(errorTypeOf(res.err)), time.Since(started))
		final := res.err == nil || res.err.ErrorType != v1alpha1.HookErrorError
		if err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
			e := &s.HookStatuses[i]
			e.ExitCode = res.exitCode
			e.Output = res.output
			e.Error = res.err
			if res.err == nil {
				e.Succeed = ptrTo(true)
				e.CompletionTime = now()
			} else if final {
				e.Succeed = ptrTo(false)
				e.CompletionTime = now()
			}
		}); err != nil {
			r.lost(ctx, err)
			return
		}
		if res.err != nil && final {
			r.c.eventContainerFailed(r.snapshot(), st.PodName, st.ContainerName, res.err, res.output)
			return
		}
		if res.err == nil {
			return
		}
	}
}

// startAttempt records the start of an attempt in container i, with the container's
// deadline if it is the first, and herr if the attempt ended before the command started.
func (r *run) startAttempt(ctx context.Context, i int, deadline time.Time, herr *v1alpha1.HookError) error {
	return r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
		e := &s.HookStatuses[i]
		e.Attempts++
		e.Timestamp = now()
		if e.Deadline == nil {
			e.Deadline = &metav1.Time{Time: deadline}
		}
		if herr != nil {
			e.Error = herr
		}
	})
}

// containerDeadline is container i's deadline: the one in its entry; for a container
// without one, the action's timeout from now (its first attempt), rounded up to the
// second so that the deadline written is never earlier than the one used. An entry that
// has attempts but no deadline was written by a controller that kept one deadline for
// the whole hook, and keeps that one.
func containerDeadline(st *v1alpha1.ExecutionHookStatus, i int, now time.Time) time.Time {
	e := st.HookStatuses[i]
	switch {
	case e.Deadline != nil:
		return e.Deadline.Time
	case e.Attempts > 0 && st.Deadline != nil:
		return st.Deadline.Time
	}
	timeout := time.Duration(v1alpha1.DefaultActionTimeoutSeconds) * time.Second
	if st.StartTime != nil && st.Deadline != nil {
		timeout = st.Deadline.Sub(st.StartTime.Time) // both written together, to the second
	}
	d := now.Add(timeout)
	if t := d.Truncate(time.Second); !t.Equal(d) {
		d = t.Add(time.Second)
	}
	return d
}

func errorTypeOf(e *v1alpha1.HookError) v1alpha1.HookErrorType {
	if e == nil {
		return ""
	}
	return e.ErrorType
}

// lastError is the error a container ends with when its time ran out between attempts.
func lastError(st v1alpha1.ContainerExecutionHookStatus, deadline time.Time) *v1alpha1.HookError {
	if st.Error != nil && st.Error.ErrorType == v1alpha1.HookErrorError {
		e := st.Error.DeepCopy()
		e.Message = fmt.Sprintf("%s; actionTimeoutSeconds passed at %s after %d attempts", e.Message,
			deadline.UTC().Format(time.RFC3339), st.Attempts)
		e.Timestamp = now()
		return e
	}
	if st.Error != nil {
		e := st.Error.DeepCopy()
		e.Timestamp = now()
		return e
	}
	return hookError(v1alpha1.HookErrorTimeout, "DeadlineExceeded",
		"actionTimeoutSeconds passed before the command could run")
}

func hookError(t v1alpha1.HookErrorType, reason, msg string) *v1alpha1.HookError {
	return &v1alpha1.HookError{ErrorType: t, Reason: reason, Message: msg, Timestamp: now()}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func now() *metav1.Time {
	t := metav1.Now()
	return &t
}

func ptrTo[T any](v T) *T { return &v }
