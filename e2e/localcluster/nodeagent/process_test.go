package nodeagent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpawnerExitCodes(t *testing.T) {
	s := newSpawner()
	defer s.stop(time.Second)
	env := []string{"PATH=/usr/bin:/bin"}

	cmd, err := newCommand([]string{"sh", "-c", "exit 7"}, t.TempDir(), env)
	require.NoError(t, err)
	p, err := s.start(cmd)
	require.NoError(t, err)
	<-p.done
	assert.Equal(t, int32(7), p.exitCode())

	cmd, err = newCommand([]string{"sleep", "30"}, t.TempDir(), env)
	require.NoError(t, err)
	p, err = s.start(cmd)
	require.NoError(t, err)
	p.signal(syscall.SIGTERM)
	<-p.done
	assert.Equal(t, int32(143), p.exitCode())
}

func TestNewCommandStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))

	_, err := newCommand([]string{"no-such-command-xyz"}, dir, []string{"PATH=/usr/bin:/bin"})
	require.Error(t, err)
	assert.Equal(t, int32(127), startExitCode(err))

	_, err = newCommand([]string{notExec}, dir, nil)
	require.Error(t, err)
	assert.Equal(t, int32(126), startExitCode(err))

	_, err = newCommand([]string{"./missing"}, dir, nil)
	require.Error(t, err)
	assert.Equal(t, int32(127), startExitCode(err))

	// The container's PATH is used, not the agent's.
	_, err = newCommand([]string{"sh"}, dir, []string{"PATH=" + dir})
	assert.Error(t, err)
}

func TestSpawnerStopKillsProcessGroups(t *testing.T) {
	s := newSpawner()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The shell ignores SIGTERM and leaves a background child behind.
	cmd, err := newCommand([]string{"sh", "-c", "trap '' TERM; sleep 60 & echo $! > " + pidFile + "; wait"}, t.TempDir(), []string{"PATH=/usr/bin:/bin"})
	require.NoError(t, err)
	p, err := s.start(cmd)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)

	s.stop(200 * time.Millisecond)
	<-p.done
	assert.Equal(t, int32(137), p.exitCode())
	assert.Eventually(t, func() bool { return syscall.Kill(child, 0) != nil }, 5*time.Second, 10*time.Millisecond, "background child survived")
	_, err = s.start(cmd)
	assert.Error(t, err, "a stopped spawner starts nothing")
}
