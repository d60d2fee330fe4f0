package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilexec "k8s.io/utils/exec"
)

// ServeExec reports the exit code only for errors that implement utilexec.ExitError; a
// bare *exec.ExitError does not (it has no ExitStatus method), which is why the executor
// wraps it.
func TestExitErrorsCarryTheExitCode(t *testing.T) {
	err := exec.Command("sh", "-c", "exit 4").Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee))

	_, bare := error(ee).(utilexec.ExitError)
	assert.False(t, bare, "a bare *exec.ExitError is not a utilexec.ExitError")

	wrapped, ok := error(exitError{ee}).(utilexec.ExitError)
	require.True(t, ok)
	assert.True(t, wrapped.Exited())
	assert.Equal(t, 4, wrapped.ExitStatus())

	notFound, ok := error(codeExitError{err: errors.New("exec: nope"), code: 127}).(utilexec.ExitError)
	require.True(t, ok)
	assert.True(t, notFound.Exited())
	assert.Equal(t, 127, notFound.ExitStatus())
}

// nopWriteCloser is a stream end that takes everything.
type nopWriteCloser struct{ bytes.Buffer }

func (*nopWriteCloser) Close() error { return nil }

// alive reports whether the process whose PID is in file runs.
func alive(t *testing.T, file string) (int, bool) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid, syscall.Kill(pid, 0) == nil
}

// As on a kubelet, an exec'd command outlives its client's stream, and dies with its
// container.
func TestExecOutlivesTheStreamAndDiesWithTheContainer(t *testing.T) {
	dir := t.TempDir()
	s := newSpawner()
	defer s.stop(time.Second)
	run := &ctrRun{dir: dir, env: os.Environ(), done: make(chan struct{})}
	e := &executor{spawner: s, run: run}
	pidFile := filepath.Join(dir, "pid")

	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		ended <- e.ExecInContainer(ctx, "", "", "", []string{"sh", "-c", "echo $$ > " + pidFile + "; while :; do echo tick; sleep 0.1; done"},
			nil, &nopWriteCloser{}, &nopWriteCloser{}, false, nil, 0)
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, 5*time.Second, 20*time.Millisecond)
	cancel() // the client goes away
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled, "the session ends with its stream")
	case <-time.After(5 * time.Second):
		t.Fatal("the exec session did not end with its stream")
	}
	time.Sleep(300 * time.Millisecond) // it keeps writing output all along
	pid, ok := alive(t, pidFile)
	assert.True(t, ok, "process %d should keep running after its stream went away", pid)

	close(run.done) // the container ends
	assert.Eventually(t, func() bool { _, ok := alive(t, pidFile); return !ok }, 5*time.Second, 20*time.Millisecond,
		"process %d should die with its container", pid)
}
