package executionhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The timeout mechanism. Cancelling a pods/exec stream does not stop the command in
// the container, so the command runs under a POSIX shell that prints its PID and then
// becomes the command (exec keeps the PID). When the deadline passes, a second exec
// sends SIGTERM to the process group of that PID (to the process alone when it leads
// no group), waits up to stopGrace, then sends SIGKILL. A container without /bin/sh
// runs the command as it is: a timeout then ends the stream only, and the status says
// that the command may still run.
const (
	wrapScript = `printf '` + pidMarker + `%s\n' "$$"; exec "$@"`
	killScript = `kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
i=0
while kill -0 "$1" 2>/dev/null && [ "$i" -lt "$2" ]; do sleep 1; i=$((i+1)); done
kill -KILL -- "-$1" 2>/dev/null; kill -KILL "$1" 2>/dev/null; true`
	stopGrace = 5 // seconds between SIGTERM and SIGKILL
	// stopTimeout bounds the kill exec itself.
	stopTimeout = 30 * time.Second
)

// wrap is the command under the PID-printing shell.
func wrap(command []string) []string {
	return append([]string{"/bin/sh", "-c", wrapScript, "stagehand-exec"}, command...)
}

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

	mu   sync.Mutex
	hook *v1alpha1.ExecutionHook // the latest written
}

// start runs hook (Running, with its containers in status) until each container has an
// outcome.
func (c *Controller) start(parent context.Context, hook *v1alpha1.ExecutionHook) *run {
	ctx, cancel := context.WithCancel(parent)
	r := &run{c: c, cancel: cancel, done: make(chan struct{}), stopped: make(chan struct{}), hook: hook.DeepCopy()}
	go r.run(ctx)
	return r
}

// stop ends the run of a deleted hook, and stops the commands in flight.
func (r *run) stop() {
	close(r.stopped)
	r.cancel()
	<-r.done
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

// update changes the status under the lock and writes it; a conflict (someone changed
// the object) is resolved by writing our status onto the latest object.
func (r *run) update(ctx context.Context, change func(st *v1alpha1.ExecutionHookStatus)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.hook.Status)
	setSummary(&r.hook.Status)
	client := r.c.stagehand.StagehandV1alpha1().ExecutionHooks(r.hook.Namespace)
	for range 5 {
		written, err := client.UpdateStatus(ctx, r.hook, metav1.UpdateOptions{})
		if err == nil {
			r.hook = written
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, err := client.Get(ctx, r.hook.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.UID != r.hook.UID {
			return apierrors.NewNotFound(v1alpha1.Resource("executionhooks"), r.hook.Name)
		}
		latest.Status = r.hook.Status
		r.hook = latest
	}
	return fmt.Errorf("writing the status of %s: conflicts on every try", r.hook.Name)
}

// setSummary writes "<succeeded>/<selected>".
func setSummary(st *v1alpha1.ExecutionHookStatus) {
	ok := 0
	for _, s := range st.HookStatuses {
		if s.Succeed != nil && *s.Succeed {
			ok++
		}
	}
	st.Summary = fmt.Sprintf("%d/%d", ok, len(st.HookStatuses))
}

// container runs the action in container i until it succeeds, fails for good or the
// deadline passes.
func (r *run) container(ctx context.Context, i int) {
	hook := r.snapshot()
	deadline := hook.Status.Deadline.Time
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
			if err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
				e := &s.HookStatuses[i]
				e.Attempts++
				e.Timestamp = now()
				e.Error = herr
			}); err != nil {
				r.lost(ctx, err)
				return
			}
			r.c.metrics.ExecFinished(string(herr.ErrorType), 0)
			continue
		}
		if err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
			e := &s.HookStatuses[i]
			e.Attempts++
			e.Timestamp = now()
		}); err != nil {
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

// fail records a final failure of container i.
func (r *run) fail(ctx context.Context, i int, herr *v1alpha1.HookError) {
	if err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
		e := &s.HookStatuses[i]
		e.Succeed = ptrTo(false)
		e.Error = herr
		e.CompletionTime = now()
	}); err != nil {
		r.lost(ctx, err)
		return
	}
	st := r.snapshot().Status.HookStatuses[i]
	r.c.eventContainerFailed(r.snapshot(), st.PodName, st.ContainerName, herr, st.Output)
}

// lost handles a status write that failed: a deleted hook ends the run; other errors
// are logged, and the hook's next sync starts a new run from what was written.
func (r *run) lost(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if !apierrors.IsNotFound(err) {
		h := r.snapshot()
		r.c.log.WithError(err).WithField("executionHook", h.Namespace+"/"+h.Name).Warning("Could not write the status; the hook is synced again")
	}
	r.cancel()
}

// check reads the pod live: a gone or terminating pod and a missing container are final;
// a container that does not run yet is worth another attempt.
func (r *run) check(ctx context.Context, ns, podName, container string) (final bool, herr *v1alpha1.HookError) {
	pod, err := r.c.kube.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, hookError(v1alpha1.HookErrorPodGone, "PodNotFound", fmt.Sprintf("pod %s does not exist", podName))
	case apierrors.IsForbidden(err):
		return true, hookError(v1alpha1.HookErrorForbidden, "Forbidden", err.Error())
	case err != nil:
		return false, hookError(v1alpha1.HookErrorError, "PodReadFailed", fmt.Sprintf("reading pod %s: %v", podName, err))
	case pod.DeletionTimestamp != nil:
		return true, hookError(v1alpha1.HookErrorPodGone, "PodTerminating", fmt.Sprintf("pod %s is being deleted", podName))
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return true, hookError(v1alpha1.HookErrorPodNotRunning, "PodFinished", fmt.Sprintf("pod %s has finished (phase %s)", podName, pod.Status.Phase))
	}
	found := false
	for _, c := range pod.Spec.Containers {
		found = found || c.Name == container
	}
	if !found {
		return true, hookError(v1alpha1.HookErrorContainerNotFound, "ContainerNotFound",
			fmt.Sprintf("pod %s has no container %s", podName, container))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Running != nil {
			return false, nil
		}
	}
	return false, hookError(v1alpha1.HookErrorPodNotRunning, "ContainerNotRunning",
		fmt.Sprintf("container %s of pod %s is not running", container, podName))
}

// attemptResult is the outcome of one attempt.
type attemptResult struct {
	exitCode  *int32
	output    string
	err       *v1alpha1.HookError // nil: exit 0
	abandoned bool                // the run stopped mid-attempt; nothing is recorded
}

// attempt runs the command once, stopping it at deadline.
func (r *run) attempt(ctx context.Context, deadline time.Time, ns, pod, container string, command []string, noShell *bool) attemptResult {
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out := &outputTail{}
	argv := command
	if !*noShell {
		argv = wrap(command)
	}
	code, err := r.c.exec.Exec(actx, ns, pod, container, argv, out)
	if !*noShell && out.PID() == 0 && actx.Err() == nil && (err != nil || code == 126 || code == 127) {
		// No /bin/sh in the container: run the command as it is.
		*noShell = true
		out = &outputTail{}
		code, err = r.c.exec.Exec(actx, ns, pod, container, command, out)
	}
	res := attemptResult{output: out.String()}
	switch {
	case errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		res.err = r.stopCommand(ns, pod, container, out.PID())
		res.output = out.String()
		return res
	case ctx.Err() != nil:
		select {
		case <-r.stopped:
			r.stopCommand(ns, pod, container, out.PID())
		default:
		}
		res.abandoned = true
		return res
	case err != nil && isForbidden(err):
		res.err = hookError(v1alpha1.HookErrorForbidden, "Forbidden", err.Error())
		return res
	case err != nil && apierrors.IsNotFound(err):
		res.err = hookError(v1alpha1.HookErrorPodGone, "PodNotFound", err.Error())
		return res
	case err != nil:
		res.err = hookError(v1alpha1.HookErrorError, "ExecFailed", "the exec did not complete: "+err.Error())
		return res
	}
	res.exitCode = ptrTo(int32(code))
	if code != 0 {
		res.err = hookError(v1alpha1.HookErrorError, "NonZeroExit", fmt.Sprintf("the command exited with code %d", code))
		if last := lastLine(res.output); last != "" {
			res.err.Message += ": " + last
		}
	}
	return res
}

// stopCommand kills the timed-out command whose PID the wrapper printed, and says so.
func (r *run) stopCommand(ns, pod, container string, pid int) *v1alpha1.HookError {
	if pid == 0 {
		return hookError(v1alpha1.HookErrorTimeout, "DeadlineExceeded",
			"actionTimeoutSeconds passed; the container has no /bin/sh, so the command could not be stopped and may still run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	out := &outputTail{}
	code, err := r.c.exec.Exec(ctx, ns, pod, container,
		[]string{"/bin/sh", "-c", killScript, "stagehand-stop", fmt.Sprint(pid), fmt.Sprint(stopGrace)}, out)
	if err != nil || code != 0 {
		return hookError(v1alpha1.HookErrorTimeout, "DeadlineExceeded", fmt.Sprintf(
			"actionTimeoutSeconds passed; stopping the command (PID %d) failed, so it may still run: %v %s", pid, err, out.String()))
	}
	return hookError(v1alpha1.HookErrorTimeout, "DeadlineExceeded",
		fmt.Sprintf("actionTimeoutSeconds passed; the command (PID %d) was stopped", pid))
}

// finish writes the hook's outcome once every container has one.
func (r *run) finish(ctx context.Context) {
	err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
		failed := 0
		for _, e := range s.HookStatuses {
			if e.Succeed == nil || !*e.Succeed {
				failed++
			}
		}
		s.CompletionTime = now()
		if failed == 0 {
			setOutcome(s, v1alpha1.ExecutionHookComplete, "Succeeded",
				fmt.Sprintf("the action succeeded in all %d containers", len(s.HookStatuses)))
		} else {
			setOutcome(s, v1alpha1.ExecutionHookFailed, "ContainersFailed",
				fmt.Sprintf("the action failed in %d of %d containers", failed, len(s.HookStatuses)))
		}
	})
	if err != nil {
		r.lost(ctx, err)
		return
	}
	hook := r.snapshot()
	r.c.eventFinished(hook)
	r.c.queue.Add(hook.Namespace + "/" + hook.Name) // for the TTL
}

// setOutcome sets the terminal phase and both conditions.
func setOutcome(s *v1alpha1.ExecutionHookStatus, phase v1alpha1.ExecutionHookPhase, reason, msg string) {
	s.Phase = phase
	complete, failed := metav1.ConditionFalse, metav1.ConditionFalse
	if phase == v1alpha1.ExecutionHookComplete {
		complete = metav1.ConditionTrue
	} else {
		failed = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ExecutionHookConditionComplete, Status: complete, Reason: reason, Message: msg})
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ExecutionHookConditionFailed, Status: failed, Reason: reason, Message: msg})
}

func hookError(t v1alpha1.HookErrorType, reason, msg string) *v1alpha1.HookError {
	return &v1alpha1.HookError{ErrorType: t, Reason: reason, Message: msg, Timestamp: now()}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
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
