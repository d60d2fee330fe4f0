package nodeagent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Exit codes for commands that could not be started, as a shell reports them.
const (
	exitCodeNotFound      = 127
	exitCodeNotExecutable = 126
)

// spawner starts every child process of the agent from one goroutine that is locked to its
// OS thread for the agent's whole life. Children get a Pdeathsig (SIGKILL, or the shim's
// signal), which the kernel sends when the *thread* that forked them exits; starting them
// from arbitrary goroutines would signal them whenever the Go runtime retires a thread.
type spawner struct {
	reqs chan spawnRequest

	mu      sync.Mutex
	live    map[*proc]struct{}
	stopped bool
	done    chan struct{} // closed when the spawner goroutine has exited
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

// proc is a started process: a container's shim, or an exec session or probe. Its Wait
// runs in a goroutine of its own; done is closed after it returned, when err holds the
// result of exec.Cmd.Wait.
type proc struct {
	cmd  *exec.Cmd
	pgid int
	shim bool // cmd is the shim (startContainer)
	done chan struct{}
	err  error
}

func newSpawner() *spawner {
	s := &spawner{
		reqs: make(chan spawnRequest),
		live: map[*proc]struct{}{},
		done: make(chan struct{}),
	}
	go func() {
		// Never unlocked: when this goroutine returns, its thread exits and the kernel
		// signals any child that is somehow still alive.
		runtime.LockOSThread()
		defer close(s.done)
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

// start starts cmd directly, in a process group of its own, with Pdeathsig SIGKILL. When
// the process exits, its whole group is killed, so that nothing it left behind outlives it
// (a container behaves the same way when its main process exits). exec sessions and exec
// probes start this way.
func (s *spawner) start(cmd *exec.Cmd) (*proc, error) {
	return s.launch(cmd, syscall.SIGKILL, false)
}

// startContainer starts cmd through the shim (shim.go), which leads the process group and
// takes the container's leftovers with it, even when the agent is killed. The error is the
// one that starting cmd directly would give.
func (s *spawner) startContainer(cmd *exec.Cmd) (*proc, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the shim's status pipe: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	shim := &exec.Cmd{
		Path:       shimSelf,
		Args:       shimArgs(cmd.Path, cmd.Args),
		Dir:        cmd.Dir,
		Env:        append(slices.Clip(env), envShim+"="+strconv.Itoa(os.Getpid())),
		Stdin:      cmd.Stdin,
		Stdout:     cmd.Stdout,
		Stderr:     cmd.Stderr,
		ExtraFiles: []*os.File{statusW},
	}
	p, err := s.launch(shim, shimParentDeathSignal, true)
	statusW.Close()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	// The shim closes its end once the command runs or could not start.
	report, err := io.ReadAll(statusR)
	statusR.Close()
	if err == nil {
		err = parseShimReport(string(report), cmd.Path)
	}
	if err != nil {
		p.signal(syscall.SIGKILL)
		<-p.done
		return nil, err
	}
	return p, nil
}

// launch starts cmd from the locked thread, in a process group of its own, with Pdeathsig
// pdeathsig. shim says that cmd is the shim, which relays graceful signals itself.
func (s *spawner) launch(cmd *exec.Cmd, pdeathsig syscall.Signal, shim bool) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = pdeathsig

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, errors.New("node agent is shutting down")
	}
	errc := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, errc: errc}
	err := <-errc
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	p := &proc{cmd: cmd, pgid: cmd.Process.Pid, shim: shim, done: make(chan struct{})}
	s.live[p] = struct{}{}
	s.mu.Unlock()

	go func() {
		p.err = cmd.Wait()
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		s.mu.Lock()
		delete(s.live, p)
		s.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the process group of p. A shim gets SIGTERM and SIGINT alone and
// relays them to its group, so that every process of the container gets them once.
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	if p.shim && sig != syscall.SIGKILL {
		_ = syscall.Kill(p.pgid, sig)
		return
	}
	_ = syscall.Kill(-p.pgid, sig)
}

// exitCode returns the exit code of a finished process the way a container runtime reports
// it: 128+signal for a process killed by a signal.
func (p *proc) exitCode() int32 {
	st := p.cmd.ProcessState
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(st.ExitCode())
}

// stop refuses new processes, sends SIGTERM to every live process group, waits up to grace,
// then sends SIGKILL and waits for them to be reaped.
func (s *spawner) stop(grace time.Duration) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	procs := make([]*proc, 0, len(s.live))
	for p := range s.live {
		procs = append(procs, p)
	}
	s.mu.Unlock()

	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
		}
	}
	for _, p := range procs {
		p.signal(syscall.SIGKILL)
	}
	for _, p := range procs {
		<-p.done
	}
	// Only now: the thread exit that follows sends Pdeathsig, which would kill an exec
	// session at once instead of after SIGTERM and the grace period.
	close(s.reqs)
	<-s.done
}

// lookPath finds file like a shell would, using the PATH of the process's own environment
// (not the agent's) and resolving relative paths against dir.
func lookPath(file, dir string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return file, checkExecutable(file)
	}
	pathEnv := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		path := filepath.Join(d, file)
		err := checkExecutable(path)
		if err == nil {
			return path, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH: %w", file, fs.ErrNotExist)
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("exec: %q: %w", path, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("exec: %q: permission denied: %w", path, fs.ErrPermission)
	}
	return nil
}

// startExitCode turns an error from starting a process into the exit code a shell would
// give: 127 for a missing command, 126 for one that cannot be executed.
func startExitCode(err error) int32 {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return exitCodeNotFound
	}
	return exitCodeNotExecutable
}

// newCommand builds an exec.Cmd for argv, looking argv[0] up in env's PATH. The error is
// a start error; see startExitCode.
func newCommand(argv []string, dir string, env []string) (*exec.Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("no command given: %w", fs.ErrNotExist)
	}
	path, err := lookPath(argv[0], dir, env)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env}, nil
}
