package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The container shim. Pdeathsig reaches only the process the agent forks, so what a
// container's command starts in turn (`sh -c "sleep 600 & wait"`) would outlive an agent
// that is killed outright. The agent therefore starts every container process through a
// copy of its own binary in shim mode (the "reexec" idea: /proc/self/exe with envShim set;
// the init below turns any binary that links this package into the shim). The shim:
//
//   - runs in the container's process group, which it leads, with Pdeathsig
//     shimParentDeathSignal, a signal it can catch;
//   - is a child subreaper, so that the container's orphans become its children;
//   - starts the real command in that same group, with the directory, environment (less
//     envShim) and stdio it was given, and tells the agent on shimStatusFD whether that
//     worked;
//   - relays SIGTERM and SIGINT, which the agent sends to the shim alone, to the whole group
//     (and to the command, should it have left the group);
//   - when the command exits, kills whatever the container left (its group and every
//     process reparented to the shim) and exits with the command's exit code, or with
//     128+signal when a signal killed it: the code the agent reports either way;
//   - when the agent dies, kills all of it as well and exits.
//
// exec sessions and exec probes are short-lived and do not go through the shim.

const (
	// envShim selects shim mode; its value is the pid of the agent that started the shim.
	envShim = "STAGEHAND_NODEAGENT_SHIM"
	// shimName is the shim's argv[0] and process name (at most 15 bytes).
	shimName = "stagehand-shim"
	// shimParentDeathSignal is the shim's Pdeathsig. The Go runtime ignores SIGUSR2 by
	// default, and the shim checks its parent before it believes one.
	shimParentDeathSignal = syscall.SIGUSR2
	// shimStatusFD is where the shim reports the start of the command (ExtraFiles[0]):
	// "ok", "errno <errno> <message>" or "error <message>".
	shimStatusFD = 3
	// shimCleanupTimeout bounds the killing of what a container left behind.
	shimCleanupTimeout = 5 * time.Second
	// shimSelf is the binary the agent runs as the shim: the very binary it runs itself,
	// even if the file has been replaced since (a rebuilt bin/stagehand-localcluster).
	shimSelf = "/proc/self/exe"
)

// Exit codes of the shim itself, for failures before the command runs.
const (
	shimExitUsage       = 126
	shimExitParentGone  = 128 + int(syscall.SIGKILL)
	shimExitStartFailed = 127
)

func init() {
	parent, ok := os.LookupEnv(envShim)
	if ok && len(os.Args) > 3 && os.Args[1] == "--" {
		os.Exit(runShim(parent, os.Args[2], os.Args[3:]))
	}
}

// shimArgs is the shim's command line for running path with argv: shimName -- path argv...
func shimArgs(path string, argv []string) []string {
	return append([]string{shimName, "--", path}, argv...)
}

// runShim is the shim's main function: it runs path with argv and returns the exit code.
func runShim(parent, path string, argv []string) int {
	// The command's own Pdeathsig watches the thread that forks it: keep that thread.
	runtime.LockOSThread()
	status := os.NewFile(shimStatusFD, "shim-status")
	syscall.CloseOnExec(shimStatusFD)
	_ = os.WriteFile("/proc/self/comm", []byte(shimName), 0)

	agent, err := strconv.Atoi(parent)
	if err != nil {
		reportStart(status, fmt.Errorf("%s=%q is not a pid: %w", envShim, parent, err))
		return shimExitUsage
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, shimParentDeathSignal)
	if os.Getppid() != agent {
		// The agent died before the handler was in place: start nothing.
		return shimExitParentGone
	}
	// The agent starts the shim as the leader of a new group (Setpgid). Should it run
	// otherwise, it must not take its caller's group for the container's.
	if syscall.Getpgrp() != os.Getpid() {
		if err := syscall.Setpgid(0, 0); err != nil {
			reportStart(status, fmt.Errorf("leading a process group of its own: %w", err))
			return shimExitUsage
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		reportStart(status, fmt.Errorf("becoming a child subreaper: %w", err))
		return shimExitUsage
	}
	child, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   withoutEnv(os.Environ(), envShim),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		reportStart(status, err)
		return shimExitStartFailed
	}
	reportStart(status, nil)

	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			if ws, exited := reapChildren(child); exited {
				killLeftovers(shimCleanupTimeout)
				return exitCodeOf(ws)
			}
		case syscall.SIGTERM, syscall.SIGINT:
			relaySignal(sigs, sig.(syscall.Signal), child)
		case shimParentDeathSignal:
			// A SIGUSR2 sent to the container's group, not a parent death, leaves the
			// parent in place; the command got it directly.
			if os.Getppid() != agent {
				killLeftovers(shimCleanupTimeout)
				return shimExitParentGone
			}
		}
	}
	return shimExitUsage // not reached: sigs is never closed
}

// reportStart tells the agent whether the command started, and closes the status pipe.
func reportStart(status *os.File, err error) {
	msg := "ok"
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		msg = fmt.Sprintf("errno %d %s", int(errno), err)
	case err != nil:
		msg = "error " + err.Error()
	}
	_, _ = status.WriteString(msg)
	status.Close()
}

// parseShimReport turns the shim's report into the error that starting path directly
// would have given: an *os.PathError around the errno, so that startExitCode and the
// message stay the same. An empty report means that the shim died before it could say.
func parseShimReport(report, path string) error {
	if report == "ok" {
		return nil
	}
	if rest, ok := strings.CutPrefix(report, "errno "); ok {
		num, _, _ := strings.Cut(rest, " ")
		if n, err := strconv.Atoi(num); err == nil {
			return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
		}
	}
	if msg, ok := strings.CutPrefix(report, "error "); ok {
		return fmt.Errorf("starting %s through the node agent's shim: %s", path, msg)
	}
	return fmt.Errorf("starting %s: the node agent's shim exited before it started the command (report %q)", path, report)
}

// relaySignal sends sig to the shim's process group, which is the container, without
// sending it back to the shim: the shim ignores sig while it signals the group. A command
// that has left the group (it is no group leader, so it can) gets sig all the same.
func relaySignal(sigs chan os.Signal, sig syscall.Signal, command int) {
	group := syscall.Getpgrp()
	signal.Ignore(sig)
	_ = syscall.Kill(-group, sig)
	signal.Notify(sigs, sig)
	if pgid, err := syscall.Getpgid(command); err == nil && pgid != group {
		_ = syscall.Kill(command, sig)
	}
}

// reapChildren reaps every child that has exited, and returns the wait status of main
// once main is among them.
func reapChildren(main int) (syscall.WaitStatus, bool) {
	var mainStatus syscall.WaitStatus
	exited := false
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return mainStatus, exited
		}
		if pid == main {
			mainStatus, exited = ws, true
		}
	}
}

// exitCodeOf is the code the shim exits with for the command's wait status: the agent
// reads 128+N for a command that signal N killed, as it would from the command itself.
func exitCodeOf(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// killLeftovers SIGKILLs every other process of the shim's process group and every
// process reparented to the shim, and reaps them, until none is left or timeout passes.
// Killing a process makes its children the shim's, so each round reaches one level deeper.
func killLeftovers(timeout time.Duration) {
	self, group := os.Getpid(), syscall.Getpgrp()
	deadline := time.Now().Add(timeout)
	for {
		live := 0
		for _, pid := range containerProcesses(self, group) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				live++
			}
		}
		children := reapAll()
		if (live == 0 && !children) || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reapAll reaps the children that have exited and reports whether any child is left.
func reapAll() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return false // ECHILD: no child at all
		case pid == 0:
			return true
		}
	}
}

// containerProcesses lists the live processes, other than self, that are in group or
// whose parent is self.
func containerProcesses(self, group int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the ")" that ends the command name: state ppid pgrp ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		if pgrp == group || ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// withoutEnv returns env less the variable name.
func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, name+"=")
	})
}
