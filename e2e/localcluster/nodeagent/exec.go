package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// execWaitDelay bounds how long an exec session waits for output after its command
// exited (a background child may hold the output open).
const execWaitDelay = 2 * time.Second

// executor runs `kubectl exec` commands on the host, in the container's directory and with
// its environment. A TTY is not emulated: with tty=1 the command's stderr goes to stdout,
// and resize events are ignored. When the command exits, whatever it left running in its
// process group is killed.
//
// As on a kubelet, the command does not end with the client's stream: when the stream
// goes away, the command keeps running, its output is thrown away, and it ends on its own
// or with its container. The container's end kills it, attached or not, as a container
// runtime does.
type executor struct {
	spawner *spawner
	run     *ctrRun
}

var _ remotecommand.Executor = &executor{}

// ExecInContainer implements remotecommand.Executor. A non-zero exit is returned as an
// error that ServeExec recognises (k8s.io/utils/exec.ExitError), so clients see the exit
// code, as with a real kubelet.
func (e *executor) ExecInContainer(ctx context.Context, _, _, _ string, argv []string, in io.Reader,
	out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if resize != nil {
		go drainResize(ctx, resize)
	}
	cmd, err := newCommand(argv, e.run.dir, e.run.env)
	if err != nil {
		return codeExitError{err: err, code: int(startExitCode(err))}
	}
	stdout, stderr := &detachable{w: out}, &detachable{w: errOut}
	if out != nil {
		cmd.Stdout = stdout
	}
	if tty {
		cmd.Stderr = stdout
	} else if errOut != nil {
		cmd.Stderr = stderr
	}
	cmd.WaitDelay = execWaitDelay
	// stdin goes through a pipe of our own: exec.Cmd would wait for an io.Reader that the
	// client never closes.
	var stdinR, stdinW *os.File
	if in != nil {
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			return fmt.Errorf("creating stdin pipe: %w", err)
		}
		cmd.Stdin = stdinR
	}
	p, err := e.spawner.start(cmd)
	if stdinR != nil {
		stdinR.Close()
	}
	if err != nil {
		if stdinW != nil {
			stdinW.Close()
		}
		return codeExitError{err: err, code: int(startExitCode(err))}
	}
	if stdinW != nil {
		go func() {
			_, _ = io.Copy(stdinW, in)
			stdinW.Close()
		}()
	}
	select {
	case <-p.done:
	case <-e.run.done:
		p.signal(syscall.SIGKILL)
		<-p.done
	case <-ctx.Done():
		// The client went away: the command goes on without it.
		stdout.detach()
		stderr.detach()
		go func() {
			select {
			case <-p.done:
			case <-e.run.done:
				p.signal(syscall.SIGKILL)
			}
		}()
		return ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil, errors.Is(p.err, exec.ErrWaitDelay):
		return nil
	case errors.As(p.err, &ee):
		return exitError{ee}
	}
	return p.err
}

// detachable passes writes on to w until detach, then throws them away, so that a
// command whose client went away is not stopped by a broken pipe.
type detachable struct {
	mu       sync.Mutex
	w        io.Writer
	detached bool
}

func (d *detachable) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.detached || d.w == nil {
		return len(p), nil
	}
	if _, err := d.w.Write(p); err != nil {
		d.detached = true
	}
	return len(p), nil
}

func (d *detachable) detach() {
	d.mu.Lock()
	d.detached = true
	d.mu.Unlock()
}

func drainResize(ctx context.Context, resize <-chan remotecommand.TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-resize:
			if !ok {
				return
			}
		}
	}
}

// exitError is the command's *exec.ExitError with the ExitStatus method that
// k8s.io/utils/exec.ExitError (what ServeExec looks for) wants; *exec.ExitError alone lacks
// it, and ServeExec would then report an internal error instead of the exit code.
type exitError struct{ *exec.ExitError }

func (e exitError) ExitStatus() int { return e.ExitCode() }

// codeExitError reports a command that could not start as a shell would: 127 or 126.
type codeExitError struct {
	err  error
	code int
}

func (e codeExitError) Error() string   { return e.err.Error() }
func (e codeExitError) String() string  { return e.err.Error() }
func (e codeExitError) Exited() bool    { return true }
func (e codeExitError) ExitStatus() int { return e.code }
func (e codeExitError) Unwrap() error   { return e.err }
