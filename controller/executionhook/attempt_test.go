package executionhook

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The tests of one attempt, of its deadline, of the stop of a command and of the pod
// check, on scriptedExec (executor_test.go), which answers from a script instead of a
// container.

var backupCommand = []string{"backup", "--now"}

// An attempt runs the command under the PID-printing wrapper, with the deadline on its
// context, and records what it ended with: exit 0 is a success, a non-zero exit an Error
// that quotes the last line of output; the wrapper's PID line is never output.
func TestAttemptRecordsTheExit(t *testing.T) {
	tests := []struct {
		name       string
		reply      execReply
		wantCode   int32
		wantOutput string
		wantErr    *v1alpha1.HookError // ErrorType, Reason and Message are compared
	}{
		{
			name:     "exit 0 succeeds",
			reply:    execReply{output: printsPID("dumped 3 tables\n")},
			wantCode: 0, wantOutput: "dumped 3 tables",
		},
		{
			name:     "a non-zero exit is an Error with the last output line",
			reply:    execReply{output: printsPID("dumping\nwrite: no space left on device\n"), code: 3},
			wantCode: 3, wantOutput: "dumping\nwrite: no space left on device",
			wantErr: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorError, Reason: "NonZeroExit",
				Message: "the command exited with code 3: write: no space left on device"},
		},
		{
			name:     "a non-zero exit without output",
			reply:    execReply{output: printsPID(""), code: 1},
			wantCode: 1,
			wantErr: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorError, Reason: "NonZeroExit",
				Message: "the command exited with code 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := newScriptedExec(tt.reply)
			r := newAttemptRun(exec, kubefake.NewSimpleClientset())
			deadline := time.Now().Add(time.Minute)
			noShell := false

			res := r.attempt(context.Background(), deadline, "ns", "p", "app", backupCommand, &noShell)

			calls := exec.commands()
			require.Len(t, calls, 1)
			assert.Equal(t, "p", calls[0].pod)
			assert.Equal(t, "app", calls[0].container)
			assert.Equal(t, wrap(backupCommand), calls[0].argv, "the command runs under the wrapper")
			assert.True(t, calls[0].deadline.Equal(deadline), "the exec's context carries the deadline")
			assert.Empty(t, exec.stops(), "a command that ended is not stopped")
			assert.False(t, res.abandoned)
			assert.False(t, noShell)
			require.NotNil(t, res.exitCode)
			assert.Equal(t, tt.wantCode, *res.exitCode)
			assert.Equal(t, tt.wantOutput, res.output)
			assertHookError(t, tt.wantErr, res.err)
		})
	}
}

// An exec that does not run the command to its end is recorded by what stopped it: the
// apiserver's refusal is Forbidden, a pod that is gone PodGone, anything else an Error
// worth another attempt. No exit code is recorded for any of them.
func TestAttemptRecordsAnExecThatFailed(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name       string
		err        error
		wantType   v1alpha1.HookErrorType
		wantReason string
	}{
		{"forbidden", apierrors.NewForbidden(pods, "p", errors.New("no pods/exec")), v1alpha1.HookErrorForbidden, "Forbidden"},
		{"a refused WebSocket upgrade", errors.New(`pods "p" is forbidden: User "x" cannot create resource`), v1alpha1.HookErrorForbidden, "Forbidden"},
		{"the pod is gone", apierrors.NewNotFound(pods, "p"), v1alpha1.HookErrorPodGone, "PodNotFound"},
		{"a broken stream", errors.New("connection reset by peer"), v1alpha1.HookErrorError, "ExecFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := newScriptedExec(execReply{output: printsPID("started\n"), err: tt.err})
			r := newAttemptRun(exec, kubefake.NewSimpleClientset())
			noShell := false

			res := r.attempt(context.Background(), time.Now().Add(time.Minute), "ns", "p", "app", backupCommand, &noShell)

			require.NotNil(t, res.err)
			assert.Equal(t, tt.wantType, res.err.ErrorType)
			assert.Equal(t, tt.wantReason, res.err.Reason)
			assert.Contains(t, res.err.Message, tt.err.Error())
			assert.Nil(t, res.exitCode)
			assert.Len(t, exec.commands(), 1, "the wrapper printed its PID: the shell is there, no second try")
			assert.Empty(t, exec.stops())
		})
	}
}

// A command that outlives its deadline is a Timeout, and the stop command goes, in the
// same container and on a context of its own, to the PID that the wrapper printed. The
// status says whether the stop worked; without a PID (no /bin/sh) nothing can be stopped,
// and the status says the command may still run.
func TestAttemptStopsACommandThatOutlivesItsDeadline(t *testing.T) {
	tests := []struct {
		name        string
		output      string
		stop        execReply
		wantStop    []string // nil: no stop command
		wantMessage string
	}{
		{
			name: "stopped", output: printsPID("waiting for the lock\n"),
			wantStop:    stopArgv(testPID),
			wantMessage: fmt.Sprintf("actionTimeoutSeconds passed; the command (PID %d) was stopped", testPID),
		},
		{
			name: "the stop fails", output: printsPID("waiting for the lock\n"),
			stop:        execReply{output: "kill: permission denied", code: 1},
			wantStop:    stopArgv(testPID),
			wantMessage: fmt.Sprintf("stopping the command (PID %d) failed, so it may still run", testPID),
		},
		{
			name: "the stop cannot run", output: printsPID("waiting for the lock\n"),
			stop:        execReply{err: errors.New("container not running")},
			wantStop:    stopArgv(testPID),
			wantMessage: "container not running",
		},
		{
			name: "no PID was printed", output: "waiting for the lock\n",
			wantMessage: "the container has no /bin/sh, so the command could not be stopped and may still run",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := newScriptedExec(execReply{output: tt.output, block: true})
			exec.stop = tt.stop
			r := newAttemptRun(exec, kubefake.NewSimpleClientset())
			deadline := time.Now().Add(30 * time.Millisecond)
			noShell := false

			res := r.attempt(context.Background(), deadline, "ns", "p", "app", backupCommand, &noShell)

			assert.Less(t, time.Since(deadline), neverCancelled/2, "the attempt ended at its deadline")
			assert.False(t, res.abandoned)
			require.NotNil(t, res.err)
			assert.Equal(t, v1alpha1.HookErrorTimeout, res.err.ErrorType)
			assert.Equal(t, "DeadlineExceeded", res.err.Reason)
			assert.Contains(t, res.err.Message, tt.wantMessage)
			assert.Nil(t, res.exitCode)
			assert.Equal(t, "waiting for the lock", res.output)
			require.Len(t, exec.commands(), 1, "a timeout is not the missing shell: no second try")
			stops := exec.stops()
			if tt.wantStop == nil {
				assert.Empty(t, stops)
				return
			}
			require.Len(t, stops, 1)
			assert.Equal(t, "p", stops[0].pod)
			assert.Equal(t, "app", stops[0].container)
			assert.Equal(t, tt.wantStop, stops[0].argv)
			assert.NoError(t, stops[0].ctxErr, "the stop does not run on the expired context")
			assert.WithinDuration(t, time.Now().Add(stopTimeout), stops[0].deadline, stopTimeout/2, "the stop is bounded")
		})
	}
}

// A run that ends while a command runs abandons the attempt (nothing is recorded). When
// the hook was deleted, the command is stopped too; when only the controller stops, it
// is left to run, and the next leader runs the hook again (at-least-once).
func TestAttemptAbandonedByItsRun(t *testing.T) {
	for _, deleted := range []bool{true, false} {
		t.Run(fmt.Sprintf("hook deleted %v", deleted), func(t *testing.T) {
			exec := newScriptedExec(execReply{output: printsPID("working\n"), block: true})
			r := newAttemptRun(exec, kubefake.NewSimpleClientset())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-exec.started
				if deleted {
					r.halt() // what stopRun does: closes stopped, then cancels
				}
				cancel()
			}()
			noShell := false

			res := r.attempt(ctx, time.Now().Add(time.Minute), "ns", "p", "app", backupCommand, &noShell)

			assert.True(t, res.abandoned)
			assert.Nil(t, res.err)
			assert.Nil(t, res.exitCode)
			if !deleted {
				assert.Empty(t, exec.stops(), "a controller that stops leaves the commands running")
				return
			}
			stops := exec.stops()
			require.Len(t, stops, 1, "a deleted hook's command is stopped")
			assert.Equal(t, stopArgv(testPID), stops[0].argv)
			assert.NoError(t, stops[0].ctxErr)
		})
	}
}

// A container without /bin/sh fails the wrapper (no PID, exit 127): the command runs
// again as it is, and so do the container's later attempts.
func TestAttemptRunsTheCommandAsItIsWithoutAShell(t *testing.T) {
	exec := newScriptedExec(
		execReply{output: "exec: \"/bin/sh\": not found\n", code: 127},
		execReply{output: "done\n"},
	)
	r := newAttemptRun(exec, kubefake.NewSimpleClientset())
	noShell := false

	res := r.attempt(context.Background(), time.Now().Add(time.Minute), "ns", "p", "app", backupCommand, &noShell)

	calls := exec.commands()
	require.Len(t, calls, 2)
	assert.Equal(t, wrap(backupCommand), calls[0].argv)
	assert.Equal(t, backupCommand, calls[1].argv)
	assert.True(t, noShell, "remembered for the next attempts")
	assert.Nil(t, res.err)
	assert.Equal(t, "done", res.output)

	_ = r.attempt(context.Background(), time.Now().Add(time.Minute), "ns", "p", "app", backupCommand, &noShell)
	calls = exec.commands()
	require.Len(t, calls, 3)
	assert.Equal(t, backupCommand, calls[2].argv, "no wrapper once the shell is known to be missing")
}

// check reads the pod before each attempt: a pod that is gone, terminating or finished,
// a container it lacks and a refusal are final, each with its error type; a container
// that does not run yet, or a read that failed, is worth another attempt.
func TestCheckNamesWhyAPodCannotRunTheCommand(t *testing.T) {
	terminating := runningPod("p", "app")
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	succeeded := runningPod("p", "app")
	succeeded.Status.Phase = corev1.PodSucceeded
	failed := runningPod("p", "app")
	failed.Status.Phase = corev1.PodFailed
	waiting := runningPod("p", "app")
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	refuse := func(err error) func(*kubefake.Clientset) {
		return func(k *kubefake.Clientset) {
			k.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
		}
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod // nil: no pod
		container  string
		react      func(*kubefake.Clientset)
		wantFinal  bool
		wantType   v1alpha1.HookErrorType // "": no error
		wantReason string
	}{
		{name: "running", pod: runningPod("p", "app"), container: "app"},
		{name: "gone", container: "app", wantFinal: true, wantType: v1alpha1.HookErrorPodGone, wantReason: "PodNotFound"},
		{name: "terminating", pod: terminating, container: "app", wantFinal: true, wantType: v1alpha1.HookErrorPodGone, wantReason: "PodTerminating"},
		{name: "succeeded", pod: succeeded, container: "app", wantFinal: true, wantType: v1alpha1.HookErrorPodNotRunning, wantReason: "PodFinished"},
		{name: "failed", pod: failed, container: "app", wantFinal: true, wantType: v1alpha1.HookErrorPodNotRunning, wantReason: "PodFinished"},
		{name: "no such container", pod: runningPod("p", "app"), container: "side", wantFinal: true, wantType: v1alpha1.HookErrorContainerNotFound, wantReason: "ContainerNotFound"},
		{name: "container not running yet", pod: waiting, container: "app", wantType: v1alpha1.HookErrorPodNotRunning, wantReason: "ContainerNotRunning"},
		{name: "read refused", container: "app", react: refuse(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))),
			wantFinal: true, wantType: v1alpha1.HookErrorForbidden, wantReason: "Forbidden"},
		{name: "read failed", container: "app", react: refuse(errors.New("etcdserver: request timed out")),
			wantType: v1alpha1.HookErrorError, wantReason: "PodReadFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewSimpleClientset()
			if tt.pod != nil {
				kube = kubefake.NewSimpleClientset(tt.pod)
			}
			if tt.react != nil {
				tt.react(kube)
			}
			r := newAttemptRun(newScriptedExec(execReply{}), kube)

			final, herr := r.check(context.Background(), "ns", "p", tt.container)

			assert.Equal(t, tt.wantFinal, final)
			if tt.wantType == "" {
				assert.Nil(t, herr)
				return
			}
			require.NotNil(t, herr)
			assert.Equal(t, tt.wantType, herr.ErrorType)
			assert.Equal(t, tt.wantReason, herr.Reason)
		})
	}
}
