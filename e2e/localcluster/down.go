package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// stopOrder is the order Down stops components in: the real node's kubelet and containerd
// first (their containers, mounts and bridge go afterwards), then the agent, so it can stop its pods
// while the control plane still runs; then the registry, if any, which nothing else needs;
// etcd last.
var stopOrder = []string{kubeProxyName, kubeletName, containerdName, agentName, registryProxyName, registryName, schedulerName, controllerManagerName,
	apiserverName, etcdName}

// isRegistryComponent tells the registry's processes, which only some clusters run, from
// those of every cluster.
func isRegistryComponent(name string) bool { return name == registryName || name == registryProxyName }

// isRealNodeComponent tells the real node's processes, which only clusters started with
// Options.RealNode run, from the others.
func isRealNodeComponent(name string) bool {
	return name == kubeProxyName || name == kubeletName || name == containerdName
}

// Down stops the cluster recorded in dir's pid files, whoever started it: SIGTERM to each
// process group, then SIGKILL after a few seconds. A pid file whose process has gone, or
// whose pid now belongs to another process, is just removed. Down on a folder where nothing
// runs, or that does not exist, succeeds.
func Down(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", dir, err)
	}
	l := layout{dir: dir}
	files, err := filepath.Glob(l.pidFile("*"))
	if err != nil {
		return fmt.Errorf("listing pid files in %s: %w", dir, err)
	}
	rank := func(f string) int {
		i := slices.Index(stopOrder, strings.TrimSuffix(filepath.Base(f), ".pid"))
		if i < 0 {
			return len(stopOrder)
		}
		return i
	}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })

	var errs []error
	for _, f := range files {
		if err := stopRecorded(f); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", f, err))
		}
	}
	killPodProcesses(dir)
	cleanupRealNode(dir, logrus.WithField("component", "localcluster"))
	if len(errs) == 0 {
		removeRegistryInfo(l)
	}
	return errors.Join(errs...)
}

// stopRecorded stops the process a pid file names, if it still runs.
func stopRecorded(pidFile string) error {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", pidFile, err)
	}
	var pid int
	var start string
	if _, err := fmt.Sscanf(string(data), "%d %s", &pid, &start); err != nil || pid <= 1 {
		return nil // not ours to interpret; the caller removes it
	}
	if !procAlive(pid, start) {
		return nil
	}
	name := strings.TrimSuffix(filepath.Base(pidFile), ".pid")
	// Our children lead their own process group (Setpgid or Setsid), so the group signal
	// also reaches anything they started. Signal only the process otherwise.
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid
	}
	_ = syscall.Kill(target, syscall.SIGTERM)
	if waitGone(pid, start, graceFor(name)) {
		_ = syscall.Kill(target, syscall.SIGKILL) // stragglers in the group
		return nil
	}
	_ = syscall.Kill(target, syscall.SIGKILL)
	if waitGone(pid, start, killGrace) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) is still running after SIGKILL", name, pid)
}

// waitGone polls until the process has gone or timeout passes.
func waitGone(pid int, start string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for procAlive(pid, start) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// podProcessEnv is the variable the node agent sets for every container process; its value
// lies under the agent's folder, which tells this cluster's pod processes apart from others.
const podProcessEnv = "STAGEHAND_TERMINATION_MESSAGE_PATH="

// killPodProcesses SIGKILLs processes that the node agent of dir started and left behind:
// the agent kills its own children when it dies, but not what they started in turn (a hook's
// shell pipeline, say). It returns how many it killed.
func killPodProcesses(dir string) int {
	marker := podProcessEnv + layout{dir: dir}.agentDir() + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			if strings.HasPrefix(kv, marker) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
				break
			}
		}
	}
	return killed
}
