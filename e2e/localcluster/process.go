package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// termGrace is how long a control-plane process gets between SIGTERM and SIGKILL.
	termGrace = 10 * time.Second
	// agentTermGrace is longer: the node agent stops its pods before it exits.
	agentTermGrace = 30 * time.Second
	// killGrace is how long to wait for a process to vanish after SIGKILL.
	killGrace = 5 * time.Second
)

// graceFor is the time between SIGTERM and SIGKILL for a component.
func graceFor(name string) time.Duration {
	if name == agentName {
		return agentTermGrace
	}
	return termGrace
}

// process is one child: a control-plane binary or the detached node agent.
type process struct {
	name    string
	pid     int
	logPath string
	pidPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once cmd.Wait returned
	waitErr error
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// startRequest asks the locked starter thread to start one command.
type startRequest struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	starterOnce sync.Once
	starterCh   chan startRequest
)

// startLocked starts cmd from one OS thread that lives as long as this process. The kernel
// sends Pdeathsig when the thread that forked a child exits, not when the process does, so
// starting children from arbitrary goroutines would kill them whenever the Go runtime retires
// a thread. This goroutine locks its thread and never unlocks it or returns.
func startLocked(cmd *exec.Cmd) error {
	starterOnce.Do(func() {
		starterCh = make(chan startRequest)
		go func() {
			runtime.LockOSThread()
			for req := range starterCh {
				req.result <- req.cmd.Start()
			}
		}()
	})
	result := make(chan error, 1)
	starterCh <- startRequest{cmd: cmd, result: result}
	return <-result
}

// startProcess starts binary with args, its output appended to <dir>/logs/<name>.log, and
// records its pid in <dir>/pids/<name>.pid. A detached process gets its own session and
// outlives this one; an attached one gets its own process group and dies with this process.
func startProcess(l layout, name string, detach bool, binary string, args []string) (*process, error) {
	logPath := l.logFile(name)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the %s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own copy
	fmt.Fprintf(logFile, "=== %s: starting %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))

	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = l.dir
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err = startLocked(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, logPath: logPath, pidPath: l.pidFile(name),
		cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := writePIDFile(p.pidPath, p.pid); err != nil {
		if stopErr := p.stop(); stopErr != nil {
			return nil, fmt.Errorf("%w (stopping %s again: %v)", err, name, stopErr)
		}
		return nil, err
	}
	return p, nil
}

// stop ends the process and its process group: SIGTERM, then SIGKILL after graceFor. It
// returns once the process has been reaped, and removes its pid file.
func (p *process) stop() error {
	defer os.Remove(p.pidPath)
	if done, _ := p.exited(); !done {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(graceFor(p.name)):
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(killGrace):
				return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.pid)
			}
		}
	}
	// Anything the process left in its group goes too.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	return nil
}

// writePIDFile records "<pid> <start time>": the start time (field 22 of /proc/<pid>/stat)
// tells the same process apart from a later one that reuses the pid.
func writePIDFile(path string, pid int) error {
	start, err := procStartTime(pid)
	if err != nil {
		return fmt.Errorf("recording pid %d: %w", pid, err)
	}
	return writeFileAtomic(path, []byte(fmt.Sprintf("%d %s\n", pid, start)), 0o644)
}

// readPIDFile returns the pid recorded in path if that process still runs.
func readPIDFile(path string) (pid int, alive bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	var start string
	if _, err := fmt.Sscanf(string(data), "%d %s", &pid, &start); err != nil {
		return 0, false, fmt.Errorf("parsing %s: %w", path, err)
	}
	return pid, procAlive(pid, start), nil
}

// procAlive reports whether pid runs and started at start (any start time when empty).
// A zombie counts as gone.
func procAlive(pid int, start string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return false
	}
	fields, err := statFields(stat)
	if err != nil {
		return false
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	return start == "" || fields[19] == start
}

func procStartTime(pid int) (string, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return "", err
	}
	fields, err := statFields(stat)
	if err != nil {
		return "", err
	}
	return fields[19], nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name, starting with
// the state (field 3), so field N of proc(5) is index N-3.
func statFields(stat []byte) ([]string, error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return nil, errors.New("short /proc stat")
	}
	return fields, nil
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
