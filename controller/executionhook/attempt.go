package executionhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
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

// podEnded is the final error of a pod that is being deleted or has finished, in which
// no command can run any more; nil for any other pod.
func podEnded(pod *corev1.Pod) *v1alpha1.HookError {
	switch {
	case pod.DeletionTimestamp != nil:
		return hookError(v1alpha1.HookErrorPodGone, "PodTerminating", fmt.Sprintf("pod %s is being deleted", pod.Name))
	case podstatus.Finished(pod):
		return hookError(v1alpha1.HookErrorPodNotRunning, "PodFinished", fmt.Sprintf("pod %s has finished (phase %s)", pod.Name, pod.Status.Phase))
	}
	return nil
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
		if last := podstatus.LastLine(res.output); last != "" {
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

// check reads the pod live: a gone or terminating pod and a missing container are final;
// a container that does not run yet is worth another attempt.
func (r *run) check(ctx context.Context, ns, podName, container string) (final bool, herr *v1alpha1.HookError) {
	pod, err := r.c.kube.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, hookError(v1alpha1.HookErrorPodGone, "PodNotFound", fmt.Sprintf("pod %s does not exist", podName))
	case apierrors.IsForbidden(err) && !apiretry.WarmingUp(err):
		return true, hookError(v1alpha1.HookErrorForbidden, "Forbidden", err.Error())
	case err != nil:
		return false, hookError(v1alpha1.HookErrorError, "PodReadFailed", fmt.Sprintf("reading pod %s: %v", podName, err))
	}
	if herr := podEnded(pod); herr != nil {
		return true, herr
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
