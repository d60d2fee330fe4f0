package main

// The cluster tax: what having Stagehand installed costs workloads that have nothing to do
// with it. Its admission policies match every pod and ReplicaSet write in the cluster, and
// its controller watches them, so plain Deployments pay for it too. The part measures the
// same Deployments three times on one local cluster of its own (A/B/A): before Stagehand is
// installed, installed, and after an uninstall. The mean of the two A phases is the
// baseline, so that a cluster that gets slower or faster as it runs biases neither side.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	// taxDeployments is how many one-replica Deployments each phase creates, by default.
	taxDeployments = 300
	// taxTarget is the goal: B / mean(A1, A2) of the apiserver's CPU.
	taxTarget = 1.05
	// Between phases (and before the scale part's rest) the apiserver counts as quiet once
	// it used less than taxQuietCPU of one CPU over taxQuietWindow; the bench waits up to
	// taxQuietLimit for that (waitIdle).
	taxQuietCPU    = 0.10
	taxQuietWindow = 3 * time.Second
	taxQuietLimit  = 2 * time.Minute
)

// The phases, in their order.
const (
	taxBefore    = "before install"
	taxInstalled = "installed"
	taxAfter     = "after uninstall"
)

// TaxResult is the cluster tax: the same Deployments before Stagehand is installed,
// installed, and after an uninstall, on one local cluster of the part's own.
type TaxResult struct {
	Deployments int `json:"deployments"`
	// Skipped says why nothing was measured.
	Skipped string     `json:"skipped,omitempty"`
	Phases  []TaxPhase `json:"phases"`
	// InstallMS is the install (CRDs, deploy/, the controller ready); UninstallMS the
	// uninstall, until every object of deploy/ is gone.
	InstallMS   float64 `json:"installMs"`
	UninstallMS float64 `json:"uninstallMs"`
	Note        string  `json:"note,omitempty"`
}

// TaxPhase is one phase: its Deployments created at once in a fresh namespace, from the
// first create to the last one fully available, and the namespace's deletion after.
type TaxPhase struct {
	Name      string  `json:"name"`
	Namespace string  `json:"namespace"`
	MS        float64 `json:"ms"`
	// APIServerCPUSeconds is kube-apiserver's utime+stime over the phase, from /proc.
	APIServerCPUSeconds float64 `json:"apiserverCpuSeconds"`
	// SettledAPIServerCPUSeconds runs on until the apiserver is quiet again (the status
	// writes and events that trail the last Deployment available).
	SettledAPIServerCPUSeconds float64 `json:"settledApiserverCpuSeconds"`
	MachineCPUSeconds          float64 `json:"machineCpuSeconds"`
	// Requests is the apiserver's requests over the phase (apiserver_request_total),
	// everyone's; TopRequests the most frequent, "resource[/subresource] VERB" → count.
	Requests    float64            `json:"requests"`
	TopRequests map[string]float64 `json:"topRequests,omitempty"`
	CPUByBinary map[string]float64 `json:"cpuByBinary,omitempty"`
	// AdmissionSeconds is the apiserver's time in each admission plugin (wall clock, summed
	// over requests; apiserver_admission_controller_admission_duration_seconds), and
	// PolicySeconds its time in each admission policy: "match <name>" in its
	// matchConditions (apiserver_admission_match_condition_evaluation_seconds), "check
	// <name>" in its validations, once it matched
	// (apiserver_*_admission_policy_check_duration_seconds).
	AdmissionSeconds map[string]float64 `json:"admissionSeconds,omitempty"`
	PolicySeconds    map[string]float64 `json:"policySeconds,omitempty"`
	// WatchEvents is the watch events the apiserver sent, by resource
	// (apiserver_watch_events_total): what every watcher, the controller's informers
	// among them, was told.
	WatchEvents map[string]float64 `json:"watchEvents,omitempty"`
	// The namespace's deletion, until it is gone.
	DeleteMS                  float64 `json:"deleteMs"`
	DeleteAPIServerCPUSeconds float64 `json:"deleteApiserverCpuSeconds"`
}

// measureTax runs the part on a local cluster of its own, started without Stagehand, and
// stops it again; the machine's description goes into res when no other part gives one.
func measureTax(ctx context.Context, o options, res *Results) (*TaxResult, error) {
	r := &TaxResult{Deployments: o.taxDeployments}
	if os.Getenv(framework.KubeconfigEnv) != "" {
		r.Skipped = "needs the local cluster: it installs and uninstalls Stagehand, and reads the apiserver's CPU from /proc"
		return r, nil
	}
	env, err := framework.StartWith(ctx, framework.StartOptions{Nodes: o.nodes, PriorityAndFairness: o.apf, NoInstall: true})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	res.Machine = machine(env)
	res.Machine.PriorityAndFairness = flowControlOn(ctx, env)
	pid, err := apiserverPID(env)
	if err != nil {
		return nil, err
	}
	cl, err := newBulkClients(env)
	if err != nil {
		return nil, err
	}
	phase := func(name string) error {
		waitIdle(ctx, pid, "tax: apiserver")
		p, err := taxPhase(ctx, env, cl, pid, name, r.Deployments)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.Phases = append(r.Phases, p)
		return nil
	}
	if err := phase(taxBefore); err != nil {
		return r, err
	}
	start := time.Now()
	if err := env.InstallCRDs(ctx); err != nil {
		return r, err
	}
	if err := env.InstallStagehand(ctx); err != nil {
		return r, err
	}
	if err := waitForController(ctx, env); err != nil {
		return r, err
	}
	r.InstallMS = sinceMS(start, time.Now())
	logf("tax: Stagehand installed in %s", ms(r.InstallMS))
	if err := phase(taxInstalled); err != nil {
		return r, err
	}
	start = time.Now()
	if err := env.UninstallStagehand(ctx); err != nil {
		return r, err
	}
	r.UninstallMS = sinceMS(start, time.Now())
	logf("tax: Stagehand uninstalled in %s", ms(r.UninstallMS))
	if err := phase(taxAfter); err != nil {
		return r, err
	}
	if b1, b2, b, ok := r.taxRatios(taxCPU); ok {
		logf("tax: apiserver CPU installed / before %.2f, / after uninstall %.2f, / their mean %.2f", b1, b2, b)
	}
	return r, nil
}

// taxPhase creates n one-replica Deployments at once in a fresh namespace, waits until all
// are available, then deletes the namespace and waits until it is gone.
func taxPhase(ctx context.Context, env *framework.Env, cl *bulkClients, pid int, name string, n int) (TaxPhase, error) {
	p := TaxPhase{Name: name}
	ns, err := newNamespace(ctx, env, "bench-tax-")
	if err != nil {
		return p, err
	}
	p.Namespace = ns
	logf("tax: %s: %d one-replica Deployments created at once in %s", name, n, ns)
	before := apiserverMetrics(ctx, env)
	cpu, machine, byBinary := procCPU(pid), machineCPU(), cpuByBinary()
	p.MS, err = deploymentsAll(ctx, cl, ns, n, manyFirstLimit)
	p.APIServerCPUSeconds, p.MachineCPUSeconds = procCPU(pid)-cpu, machineCPU()-machine
	p.CPUByBinary = topCPU(cpuSince(byBinary, cpuByBinary()), 6)
	after := apiserverMetrics(ctx, env)
	requests := diffSeries(before.requests, after.requests)
	for _, v := range requests {
		p.Requests += v
	}
	p.TopRequests = topCPU(requests, 8)
	if err == nil {
		waitIdle(ctx, pid, "tax: apiserver")
		p.SettledAPIServerCPUSeconds = procCPU(pid) - cpu
	}
	p.AdmissionSeconds = topCPU(diffSeries(before.admission, after.admission), 6)
	p.PolicySeconds = topCPU(diffSeries(before.policies, after.policies), 8)
	p.WatchEvents = topCPU(diffSeries(before.watchEvents, after.watchEvents), 6)
	deleteStart, deleteCPU := time.Now(), procCPU(pid)
	deleteNamespace(ctx, env, ns)
	p.DeleteMS, p.DeleteAPIServerCPUSeconds = sinceMS(deleteStart, time.Now()), procCPU(pid)-deleteCPU
	if err != nil {
		return p, err
	}
	logf("tax: %s: available in %s; apiserver %.1f CPU-s (%.1f settled), %.0f requests; policies %s; namespace deleted in %s (apiserver %.1f CPU-s)",
		name, ms(p.MS), p.APIServerCPUSeconds, p.SettledAPIServerCPUSeconds, p.Requests, secondsList(p.PolicySeconds), ms(p.DeleteMS), p.DeleteAPIServerCPUSeconds)
	return p, nil
}

// taxMetrics are the apiserver's counters a phase is the difference of.
type taxMetrics struct{ requests, admission, policies, watchEvents map[string]float64 }

func apiserverMetrics(ctx context.Context, env *framework.Env) taxMetrics {
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("tax: the apiserver's metrics: %v", err)
		return taxMetrics{}
	}
	return parseTaxMetrics(string(raw))
}

// parseTaxMetrics reads the requests by resource and verb, the admission plugins' time and
// the admission policies' time from the apiserver's metrics text.
func parseTaxMetrics(text string) taxMetrics {
	m := taxMetrics{requests: apiserverRequests(text), admission: map[string]float64{}, policies: map[string]float64{}, watchEvents: map[string]float64{}}
	eachSeries(text, func(name string, labels map[string]string, v float64) {
		switch {
		case name == "apiserver_admission_controller_admission_duration_seconds_sum":
			m.admission[labels["name"]] += v
		case name == "apiserver_admission_match_condition_evaluation_seconds_sum":
			m.policies["match "+labels["name"]] += v
		case strings.HasPrefix(name, "apiserver_") && strings.HasSuffix(name, "_admission_policy_check_duration_seconds_sum"):
			m.policies["check "+labels["policy"]] += v
		case name == "apiserver_watch_events_total":
			m.watchEvents[cmp.Or(labels["resource"], labels["kind"])] += v
		}
	})
	return m
}

// diffSeries is after - before, key by key, without the keys that did not grow.
func diffSeries(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// apiserverPID reads the local cluster's pid file of kube-apiserver ("<pid> <start time>").
func apiserverPID(env *framework.Env) (int, error) {
	path := filepath.Join(env.Cluster().Dir(), "pids", "kube-apiserver.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("the apiserver's pid: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("the apiserver's pid: %s is empty", path)
	}
	return strconv.Atoi(f[0])
}

// procCPU is the CPU seconds of pid so far (0 when gone).
func procCPU(pid int) float64 {
	if ps, ok := readProc(pid); ok {
		return ps.cpu
	}
	return 0
}

// waitIdle waits until process pid is quiet (below taxQuietCPU of one CPU over
// taxQuietWindow), so that what comes next does not pay for what came before it; after
// taxQuietLimit it goes on and says so. who names the process in the log. It returns how
// long it waited and whether pid was quiet by then.
func waitIdle(ctx context.Context, pid int, who string) (time.Duration, bool) {
	began := time.Now()
	last := procCPU(pid)
	for time.Since(began) < taxQuietLimit {
		select {
		case <-ctx.Done():
			return time.Since(began), false
		case <-time.After(taxQuietWindow):
		}
		now := procCPU(pid)
		if idle(now-last, taxQuietWindow) {
			logf("%s quiet after %s (%.2f CPU-s over %s)", who, time.Since(began).Round(time.Second), now-last, taxQuietWindow)
			return time.Since(began), true
		}
		last = now
	}
	logf("%s still busy after %s; measuring anyway", who, taxQuietLimit)
	return time.Since(began), false
}

// idle reports whether used CPU seconds over window is below taxQuietCPU of one CPU.
func idle(used float64, window time.Duration) bool { return used < taxQuietCPU*window.Seconds() }
