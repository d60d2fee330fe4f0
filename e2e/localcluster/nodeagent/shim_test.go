package nodeagent

import (
	"bufio"
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
)

var testEnv = []string{"PATH=/usr/bin:/bin"}

// startShimmed runs script with sh through the shim, in dir.
func startShimmed(t *testing.T, s *spawner, dir, script string, env ...string) *proc {
	t.Helper()
	cmd, err := newCommand([]string{"sh", "-c", script}, dir, append(env, testEnv...))
	require.NoError(t, err)
	p, err := s.startContainer(cmd)
	require.NoError(t, err)
	require.True(t, p.shim)
	return p
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 5*time.Second, 5*time.Millisecond,
		"%s never appeared", path)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	waitForFile(t, path)
	var pid int
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(path)
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		pid = n
		return err == nil
	}, 5*time.Second, 5*time.Millisecond)
	return pid
}

// The agent reads the same exit codes through the shim as from the command itself.
func TestShimExitCodes(t *testing.T) {
	s := newSpawner()
	defer s.stop(time.Second)
	tests := []struct {
		name   string
		script string
		signal syscall.Signal // sent once the script wrote "ready"
		want   int32
	}{
		{name: "success", script: "true", want: 0},
		{name: "exit code", script: "exit 7", want: 7},
		{name: "killed by a signal", script: "kill -KILL $$", want: 137},
		{name: "SIGTERM ends it", script: "touch ready; sleep 30", signal: syscall.SIGTERM, want: 143},
		{name: "SIGTERM trapped", script: "trap 'exit 3' TERM; touch ready; sleep 30 & wait", signal: syscall.SIGTERM, want: 3},
		{name: "SIGKILL", script: "touch ready; sleep 30", signal: syscall.SIGKILL, want: 137},
		{
			name:   "SIGTERM reaches a command that left the group",
			script: `exec setsid sh -c 'trap "exit 9" TERM; touch ready; sleep 30 & wait'`,
			signal: syscall.SIGTERM, want: 9,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startShimmed(t, s, dir, tt.script)
			if tt.signal != 0 {
				waitForFile(t, filepath.Join(dir, "ready"))
				p.signal(tt.signal)
			}
			<-p.done
			assert.Equal(t, tt.want, p.exitCode())
		})
	}
}

// SIGTERM reaches every process of the container once: the shim relays it to its group
// without a second copy for the processes that the group signal already reached.
func TestShimRelaysSIGTERMOnce(t *testing.T) {
	s := newSpawner()
	defer s.stop(time.Second)
	dir := t.TempDir()
	p := startShimmed(t, s, dir, `n=0; trap 'n=$((n+1)); echo $n >> count' TERM; touch ready
i=0; while [ $i -lt 10 ]; do sleep 0.05; i=$((i+1)); done`)
	waitForFile(t, filepath.Join(dir, "ready"))
	p.signal(syscall.SIGTERM)
	<-p.done
	assert.Equal(t, int32(0), p.exitCode())
	count, err := os.ReadFile(filepath.Join(dir, "count"))
	require.NoError(t, err, "the shell never got SIGTERM")
	assert.Equal(t, "1\n", string(count))
}

// When the command exits, what it left behind dies with it, even a process that left the
// container's process group.
func TestShimKillsLeftoversWhenTheCommandExits(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	s := newSpawner()
	defer s.stop(time.Second)
	dir := t.TempDir()
	p := startShimmed(t, s, dir, "sleep 60 & echo $! > grouped; setsid sleep 60 & echo $! > escaped; env > env; exit 5",
		"EXTRA=kept")
	grouped, escaped := readPID(t, filepath.Join(dir, "grouped")), readPID(t, filepath.Join(dir, "escaped"))
	<-p.done
	assert.Equal(t, int32(5), p.exitCode())
	for name, pid := range map[string]int{"grouped": grouped, "escaped": escaped} {
		assert.Error(t, syscall.Kill(pid, 0), "the %s sleep (pid %d) outlived the container", name, pid)
	}
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, err)
	assert.Contains(t, string(env), "EXTRA=kept")
	assert.NotContains(t, string(env), envShim, "the command must not see the shim's variable")
}

// A command that cannot be executed gives the same error through the shim as directly.
func TestShimStartErrors(t *testing.T) {
	s := newSpawner()
	defer s.stop(time.Second)
	dir := t.TempDir()
	notABinary := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(notABinary, []byte("\x00\x01 not an executable"), 0o755))

	cmd, err := newCommand([]string{notABinary}, dir, testEnv)
	require.NoError(t, err)
	_, direct := s.start(cmd)
	require.Error(t, direct)

	cmd, err = newCommand([]string{notABinary}, dir, testEnv)
	require.NoError(t, err)
	_, shimmed := s.startContainer(cmd)
	require.Error(t, shimmed)
	assert.Equal(t, direct.Error(), shimmed.Error())
	assert.Equal(t, int32(exitCodeNotExecutable), startExitCode(shimmed))
}

func TestParseShimReport(t *testing.T) {
	tests := []struct {
		name, report, want string
		code               int32
	}{
		{name: "started", report: "ok"},
		{name: "errno", report: "errno 2 no such file or directory", want: "fork/exec /x: no such file or directory", code: exitCodeNotFound},
		{name: "other error", report: "error becoming a child subreaper: boom", want: "starting /x through the node agent's shim: becoming a child subreaper: boom", code: exitCodeNotExecutable},
		{name: "shim died", report: "", want: `starting /x: the node agent's shim exited before it started the command (report "")`, code: exitCodeNotExecutable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseShimReport(tt.report, "/x")
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, tt.code, startExitCode(err))
		})
	}
}

const helperAgentEnv = "STAGEHAND_TEST_KILLED_AGENT_MARK"

// An agent killed with SIGKILL takes its containers with it, including what their
// commands started in the background: the shims get their parent-death signal.
func TestShimTakesTheContainerWhenTheAgentDies(t *testing.T) {
	mark := helperAgentEnv + "=" + t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperAgentThatGetsKilled$", "-test.timeout=2m")
	helper.Env = append(os.Environ(), mark)
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	helper.Stderr = os.Stderr
	require.NoError(t, helper.Start())
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "helper agent ready" {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the helper ended before it was ready")
	case <-time.After(time.Minute):
		t.Fatal("the helper agent did not get ready within a minute")
	}
	require.Eventually(t, func() bool { return len(processesWithEnv(mark, "sleep 600")) == 2 }, 10*time.Second,
		20*time.Millisecond, "the container's two sleeps never ran: %v", processesWithEnv(mark, ""))

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	assert.Eventually(t, func() bool { return len(processesWithEnv(mark, "")) == 0 }, 10*time.Second,
		20*time.Millisecond, "processes outlived the killed agent")
	if left := processesWithEnv(mark, ""); len(left) > 0 {
		t.Logf("left behind: %v", left)
		for _, l := range left {
			pid, _ := strconv.Atoi(strings.Fields(l)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestHelperAgentThatGetsKilled is the agent that TestShimTakesTheContainerWhenTheAgentDies
// kills; it runs only when that test starts it.
func TestHelperAgentThatGetsKilled(t *testing.T) {
	mark, ok := os.LookupEnv(helperAgentEnv)
	if !ok {
		t.Skip("helper for TestShimTakesTheContainerWhenTheAgentDies")
	}
	s := newSpawner()
	startShimmed(t, s, t.TempDir(), "sleep 600 & sleep 600", helperAgentEnv+"="+mark)
	_, _ = os.Stdout.WriteString("helper agent ready\n")
	time.Sleep(time.Minute) // the test kills this process long before
	s.stop(time.Second)
}

// processesWithEnv lists the live processes ("<pid> <command line>") whose environment
// holds the variable kv and, unless cmdline is empty, whose command line is cmdline.
func processesWithEnv(kv, cmdline string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains("\x00"+string(environ), "\x00"+kv+"\x00") {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if cmdline == "" || line == cmdline {
			found = append(found, e.Name()+" "+line)
		}
	}
	return found
}
