package main

// Memory and CPU of the controller and the deployer processes, from /proc. On the local
// cluster the node agent runs every pod as host processes; a process belongs to this
// run's cluster when its KUBECONFIG (which the agent points into the cluster's folder)
// lies under that folder, since other local clusters may run on the same machine.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	sampleEvery   = 250 * time.Millisecond
	clockTicks    = 100 // USER_HZ, for utime and stime in /proc/<pid>/stat
	controllerBin = "stagehand-controller"
	deployerBin   = "stagehand-deployer"
)

type procSample struct {
	hwmKB, rssKB int64
	cpu          float64 // seconds
}

// procSampler samples /proc every sampleEvery until stopped.
type procSampler struct {
	dir  string // the cluster's folder; empty: not a local cluster, nothing sampled
	mu   sync.Mutex
	kind map[int]string // pid → controllerBin, deployerBin or ""

	controllerPID int
	controller    procSample
	deployers     map[int]procSample
	atOnce        int
	sumAtOnceKB   int64

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
}

func startSampling(ctx context.Context, env *framework.Env) *procSampler {
	s := &procSampler{kind: map[int]string{}, deployers: map[int]procSample{}, stopCh: make(chan struct{}), done: make(chan struct{})}
	if env.Local() && env.Kubeconfig != "" {
		s.dir = filepath.Dir(env.Kubeconfig) + string(filepath.Separator)
	}
	go func() {
		defer close(s.done)
		for {
			s.sample()
			select {
			case <-ctx.Done():
				return
			case <-s.stopCh:
				return
			case <-time.After(sampleEvery):
			}
		}
	}()
	return s
}

func (s *procSampler) stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

// resetDeployers forgets the deployers seen so far.
func (s *procSampler) resetDeployers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deployers = map[int]procSample{}
	s.atOnce, s.sumAtOnceKB = 0, 0
}

// controllerCPU is the controller's CPU seconds now (0 when not found).
func (s *procSampler) controllerCPU() float64 {
	s.mu.Lock()
	pid := s.controllerPID
	s.mu.Unlock()
	if pid == 0 {
		return 0
	}
	if ps, ok := readProc(pid); ok {
		return ps.cpu
	}
	return 0
}

// deployerCPU is the CPU seconds of the deployers seen since the last reset (each one's
// last sample, so a lower bound).
func (s *procSampler) deployerCPU() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum float64
	for _, ps := range s.deployers {
		sum += ps.cpu
	}
	return sum
}

// machineCPU is the busy CPU seconds of the whole machine so far, from /proc/stat
// (0 when unreadable): everything but idle and iowait.
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return busy / clockTicks
}

// cpuByBinary is the CPU seconds of every process on the machine now, by its binary's
// name, keyed by pid so that two readings can be subtracted (cpuSince).
func cpuByBinary() map[int]namedCPU {
	out := map[int]namedCPU{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		out[pid] = namedCPU{name: filepath.Base(string(argv0)), cpu: cpuOf(string(stat))}
	}
	return out
}

type namedCPU struct {
	name string
	cpu  float64
}

// cpuSince sums, by binary, the CPU each process used between two readings; a process
// absent from before counts from 0, one gone by now is missed.
func cpuSince(before, now map[int]namedCPU) map[string]float64 {
	out := map[string]float64{}
	for pid, n := range now {
		used := n.cpu
		if b, ok := before[pid]; ok && b.name == n.name {
			used -= b.cpu
		}
		if used > 0 {
			out[n.name] += used
		}
	}
	return out
}

func (s *procSampler) sample() {
	if s.dir == "" {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	alive := map[int]bool{}
	running, sumKB := 0, int64(0)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		alive[pid] = true
		kind, known := s.kind[pid]
		if !known {
			kind = s.classify(pid)
			s.kind[pid] = kind
		}
		if kind == "" {
			continue
		}
		ps, ok := readProc(pid)
		if !ok {
			continue
		}
		switch kind {
		case controllerBin:
			// Two replicas run; the leader is the one that works. A standby's CPU stays
			// near zero, so the busier process is the leader (a takeover moves it).
			if s.controllerPID == 0 || pid == s.controllerPID || ps.cpu > s.controller.cpu {
				s.controllerPID, s.controller = pid, ps
			}
		case deployerBin:
			s.deployers[pid] = ps
			running++
			sumKB += ps.rssKB
		}
	}
	for pid := range s.kind {
		if !alive[pid] {
			delete(s.kind, pid)
		}
	}
	if running > s.atOnce {
		s.atOnce, s.sumAtOnceKB = running, sumKB
	}
}

// classify names a process of this cluster by its binary, "" for any other.
func (s *procSampler) classify(pid int) string {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	kind := filepath.Base(string(argv0))
	if kind != controllerBin && kind != deployerBin {
		return ""
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("KUBECONFIG=")); ok && strings.HasPrefix(string(v), s.dir) {
			return kind
		}
	}
	return ""
}

// readProc reads a process's peak and current RSS and its CPU seconds.
func readProc(pid int) (procSample, bool) {
	var ps procSample
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ps, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			ps.hwmKB = kbOf(v)
		} else if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			ps.rssKB = kbOf(v)
		}
	}
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		ps.cpu = cpuOf(string(stat))
	}
	return ps, ps.hwmKB > 0
}

// kbOf parses "   12345 kB".
func kbOf(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n
}

// cpuOf is utime+stime in seconds from a /proc/<pid>/stat line (fields 14 and 15; the
// command in parentheses may hold spaces, so fields count from its closing parenthesis).
func cpuOf(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / clockTicks
}

// fill copies the samples into r.
func (s *procSampler) fill(r *ManyResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controllerPID != 0 {
		if ps, ok := readProc(s.controllerPID); ok {
			s.controller = ps
		}
	}
	r.ControllerPeakMB = kbToMiB(s.controller.hwmKB)
	var peaks []float64
	for _, ps := range s.deployers {
		peaks = append(peaks, kbToMiB(ps.hwmKB))
		r.DeployerCPUSeconds += ps.cpu
	}
	sort.Float64s(peaks)
	r.DeployerProcesses = len(peaks)
	if len(peaks) > 0 {
		r.DeployerPeakMB = peaks[len(peaks)-1]
		r.DeployerMedianPeakMB = median(peaks)
	}
	r.DeployersAtOnce, r.DeployersSumPeakMB = s.atOnce, kbToMiB(s.sumAtOnceKB)
}

func kbToMiB(kb int64) float64 { return float64(kb) / 1024 }
