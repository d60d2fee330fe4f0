package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupHierarchies returns the mounted cgroup hierarchies: the one of cgroup v2, or on
// cgroup v1 each controller's (cpu,cpuacct and its like are links to one of them).
func cgroupHierarchies() []string {
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return []string{cgroupMount}
	}
	entries, err := os.ReadDir(cgroupMount)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			out = append(out, filepath.Join(cgroupMount, e.Name()))
		}
	}
	return out
}

// createCgroup creates the kubelet's cgroupRoot in every hierarchy: the kubelet refuses a
// cgroupRoot that does not exist. On cgroup v1 a new cpuset starts with no CPUs and no memory
// nodes, so it gets its parent's.
func createCgroup(name string) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating the cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if data, err := os.ReadFile(filepath.Join(h, f)); err == nil && filepath.Base(h) == "cpuset" {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					return fmt.Errorf("setting %s of %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}

// cleanupRealNode removes what the real node of the cluster in clusterDir leaves outside its
// processes, once the kubelet and containerd have stopped: the containers' processes (all
// in the cluster's cgroup), containerd's shims, the mounts under the folder, the cgroups and
// the bridge. It does nothing where no real node ran, and it logs, rather than returns, what
// it cannot remove.
func cleanupRealNode(clusterDir string, log *logrus.Entry) {
	n := newRealNode(clusterDir, "", "")
	if _, err := os.Stat(n.dir); err != nil {
		return
	}
	pids := map[int]bool{} // a process is in one cgroup of each hierarchy
	for _, h := range cgroupHierarchies() {
		cgroupProcesses(filepath.Join(h, n.cgroup), pids)
	}
	killed := 0
	for pid := range pids {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	killed += killProcessesWith("-address " + n.socket())
	if killed > 0 {
		log.WithField("count", killed).Info("Killed the real node's containers and shims")
	}
	n.cleanupKubeProxy(log)
	for _, m := range mountsUnder(n.dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			log.WithError(err).WithField("mount", m).Warn("Unmounting a mount of the real node")
		}
	}
	for _, h := range cgroupHierarchies() {
		if err := removeCgroupTree(filepath.Join(h, n.cgroup)); err != nil {
			log.WithError(err).Warn("Removing the real node's cgroups")
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.bridge)); err == nil {
		if out, err := exec.Command("ip", "link", "del", n.bridge).CombinedOutput(); err != nil {
			log.WithError(err).WithField("output", strings.TrimSpace(string(out))).
				Warnf("Deleting the bridge %s", n.bridge)
		}
	}
}

// cgroupProcesses adds the processes in the cgroup dir and below it to pids.
func cgroupProcesses(dir string, pids map[int]bool) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				pids[pid] = true
			}
		}
		return nil
	})
}

// killProcessesWith SIGKILLs the processes whose command line contains s.
func killProcessesWith(s string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), s) &&
			syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		// /proc/self/mounts writes a space as \040.
		m := strings.ReplaceAll(fields[1], `\040`, " ")
		if m == dir || strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// removeCgroupTree removes the cgroup dir and its children, deepest first. A cgroup's
// directory goes with rmdir once no process is in it; its files are the kernel's.
func removeCgroupTree(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("removing %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
