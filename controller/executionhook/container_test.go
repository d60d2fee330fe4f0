package executionhook

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// runDeadline is the container deadline of the tests through a whole run: short, yet long
// enough for the pod check and the first status write on a busy machine, so that the
// command always starts before it.
const runDeadline = 250 * time.Millisecond

// Through a whole run, a command that outlives the container's deadline ends the
// container Failed with the Timeout in its entry, after the stop went to its PID; it is
// not tried again.
func TestRunRecordsATimeoutAndStopsTheCommand(t *testing.T) {
	hook := runningHook(time.Minute, nil, "app")
	hook.Status.HookStatuses[0].Deadline = &metav1.Time{Time: time.Now().Add(runDeadline)}
	sh := stagehandfake.NewSimpleClientset(hook)
	exec := newScriptedExec(execReply{output: printsPID("waiting for the lock\n"), block: true})
	c := runController(sh, exec, runningPod("p", "app"))
	defer c.queue.ShutDown()

	waitDone(t, c.start(context.Background(), hook))

	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookFailed, got.Status.Phase)
	e := got.Status.HookStatuses[0]
	assert.Equal(t, ptrTo(false), e.Succeed)
	assert.Equal(t, int32(1), e.Attempts)
	assert.Nil(t, e.ExitCode)
	assert.Equal(t, "waiting for the lock", e.Output)
	require.NotNil(t, e.Error)
	assert.Equal(t, v1alpha1.HookErrorTimeout, e.Error.ErrorType)
	assert.Contains(t, e.Error.Message, "was stopped")
	assert.Len(t, exec.commands(), 1)
	stops := exec.stops()
	require.Len(t, stops, 1)
	assert.Equal(t, stopArgv(testPID), stops[0].argv)
}

// Through a whole run, a non-zero exit keeps its exit code, output and last line in the
// entry; when no further attempt fits before the deadline the container fails with that
// error, not with a bare timeout.
func TestRunRecordsANonZeroExit(t *testing.T) {
	hook := runningHook(time.Minute, nil, "app")
	hook.Status.HookStatuses[0].Deadline = &metav1.Time{Time: time.Now().Add(runDeadline)}
	sh := stagehandfake.NewSimpleClientset(hook)
	exec := newScriptedExec(execReply{output: printsPID("dumping\nwrite: no space left on device\n"), code: 3})
	c := runController(sh, exec, runningPod("p", "app"))
	defer c.queue.ShutDown()

	waitDone(t, c.start(context.Background(), hook))

	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookFailed, got.Status.Phase)
	e := got.Status.HookStatuses[0]
	assert.Equal(t, ptrTo(false), e.Succeed)
	assert.Equal(t, ptrTo(int32(3)), e.ExitCode)
	assert.Equal(t, "dumping\nwrite: no space left on device", e.Output)
	require.NotNil(t, e.Error)
	assert.Equal(t, v1alpha1.HookErrorError, e.Error.ErrorType)
	assert.Equal(t, "NonZeroExit", e.Error.Reason)
	assert.Contains(t, e.Error.Message, "exited with code 3: write: no space left on device")
	assert.Contains(t, e.Error.Message, "after 1 attempts")
	assert.Len(t, exec.commands(), 1, "the back-off (1 s) does not fit before the deadline")
	assert.Empty(t, exec.stops())
}
