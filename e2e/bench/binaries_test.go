package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHasEnv(t *testing.T) {
	env := []byte("PATH=/bin\x00STAGEHAND_NAMESPACE=web\x00OTHER=1\x00")
	assert.True(t, hasEnv(env, "STAGEHAND_NAMESPACE=web"))
	assert.True(t, hasEnv(env, "PATH=/bin"), "the first variable")
	assert.False(t, hasEnv(env, "STAGEHAND_NAMESPACE=we"), "a whole variable, not a prefix")
	assert.False(t, hasEnv(env, "NAMESPACE=web"), "a whole variable, not a suffix")
	assert.False(t, hasEnv(nil, "OTHER=1"))
}

func TestProcReaders(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"STAGEHAND_NAMESPACE=web"}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	// Right after the exec the kernel may show an empty environment for a moment.
	require.Eventually(t, func() bool { return len(environ(pid)) > 0 }, 5*time.Second, time.Millisecond)
	assert.True(t, hasEnv(environ(pid), "STAGEHAND_NAMESPACE=web"))
	assert.False(t, isDeployer(pid), "sleep is no deployer")
	assert.Positive(t, vmHWM(os.Getpid()), "this test's own peak RSS")
	assert.Zero(t, vmHWM(-1), "no such process")
}
