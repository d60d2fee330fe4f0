package main

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	// manyFirst is how many one-replica workloads of each kind are created at once.
	manyFirst = 300
	// manyRolling is how many DeploymentConfigs roll at once on one controller, by default.
	manyRolling = 1000
	// The goals.
	controllerRSSTarget  = 150.0
	deployerRSSTarget    = 30.0
	manyFirstLimit       = 15 * time.Minute
	manyRollingLimit     = 30 * time.Minute
	namespaceDeleteLimit = 10 * time.Minute
)

// ManyResult is many rollouts at once: first rollouts of DeploymentConfigs vs Deployments,
// and many DeploymentConfigs rolling on one controller, with the processes' peak memory.
type ManyResult struct {
	// First: manyFirst DCs created at once, then (alone) as many Deployments.
	FirstCount        int     `json:"firstCount"`
	FirstDCMS         float64 `json:"firstDcMs"`
	FirstDeploymentMS float64 `json:"firstDeploymentMs"`
	FirstRatio        float64 `json:"firstRatio"`
	FirstDCFailed     int     `json:"firstDcFailed"`
	// CPU seconds while the DCs rolled out: the whole machine's (of FirstCPUs), the
	// controller's and the deployers' (a lower bound: each process's last sample).
	FirstMachineCPUSeconds    float64 `json:"firstMachineCpuSeconds,omitempty"`
	FirstCPUs                 int     `json:"firstCpus,omitempty"`
	FirstControllerCPUSeconds float64 `json:"firstControllerCpuSeconds,omitempty"`
	FirstDeployerCPUSeconds   float64 `json:"firstDeployerCpuSeconds,omitempty"`
	// FirstCPUByBinary is the CPU seconds of the processes alive at the end, by binary,
	// while the DCs rolled out (the deployers, mostly ended by then, are above).
	FirstCPUByBinary map[string]float64 `json:"firstCpuByBinary,omitempty"`
	// The same while the Deployments rolled out.
	FirstDeploymentMachineCPUSeconds float64            `json:"firstDeploymentMachineCpuSeconds,omitempty"`
	FirstDeploymentCPUByBinary       map[string]float64 `json:"firstDeploymentCpuByBinary,omitempty"`
	// What held the first rollouts back, and the apiserver's requests per rollout.
	FirstDCThrottle         *Throttle `json:"firstDcThrottle,omitempty"`
	FirstDeploymentThrottle *Throttle `json:"firstDeploymentThrottle,omitempty"`
	// The floor (floor.go): as many Deployments and bare run-once pods of the deployer
	// pod's shape, created together, and the ratios it gives (floorreport.go); absent with
	// -many-floor=false. FirstFloorMS is the later of the last Deployment available
	// (FirstFloorDeploymentsMS) and the last pod Succeeded (FirstFloorPodsMS).
	FirstFloorMS                float64            `json:"firstFloorMs,omitempty"`
	FirstFloorDeploymentsMS     float64            `json:"firstFloorDeploymentsMs,omitempty"`
	FirstFloorPodsMS            float64            `json:"firstFloorPodsMs,omitempty"`
	FirstFloorPodsFailed        int                `json:"firstFloorPodsFailed,omitempty"`
	FirstFloorPodFailReasons    []string           `json:"firstFloorPodFailReasons,omitempty"`
	FirstFloorMachineCPUSeconds float64            `json:"firstFloorMachineCpuSeconds,omitempty"`
	FirstFloorCPUByBinary       map[string]float64 `json:"firstFloorCpuByBinary,omitempty"`
	FirstFloorThrottle          *Throttle          `json:"firstFloorThrottle,omitempty"`
	Floor                       *ManyFloor         `json:"floor,omitempty"`

	// Rolling: manyRolling DCs created (first rollouts timed too), then all templates
	// changed at once.
	RollingCount    int     `json:"rollingCount"`
	RollingCreateMS float64 `json:"rollingCreateMs"`
	// RollingCreateFailed counts the first revisions that failed (nil: a run before the
	// bench recorded it).
	RollingCreateFailed *int `json:"rollingCreateFailed,omitempty"`
	// The failed revisions by status reason, with an example message.
	RollingCreateFailReasons []string `json:"rollingCreateFailReasons,omitempty"`
	RollingFailReasons       []string `json:"rollingFailReasons,omitempty"`
	RollingMS                float64  `json:"rollingMs"`
	RollingComplete          int      `json:"rollingComplete"`
	RollingFailed            int      `json:"rollingFailed"`
	ControllerPeakMB         float64  `json:"controllerPeakMiB"`
	// Controller and deployer CPU seconds during the rolling phase (the deployers' is a
	// lower bound: each process's last sample).
	ControllerCPUSeconds float64 `json:"controllerCpuSeconds"`
	DeployerPeakMB       float64 `json:"deployerPeakMiB"`
	DeployerMedianPeakMB float64 `json:"deployerMedianPeakMiB"`
	DeployerProcesses    int     `json:"deployerProcesses"`
	DeployersAtOnce      int     `json:"deployersAtOnce"`
	DeployersSumPeakMB   float64 `json:"deployersSumPeakMiB"`
	DeployerCPUSeconds   float64 `json:"deployerCpuSeconds"`
	Note                 string  `json:"note,omitempty"`
}

func measureMany(ctx context.Context, env *framework.Env, o options) (*ManyResult, error) {
	r := &ManyResult{FirstCount: manyFirst, RollingCount: o.manyRolling}
	cl, err := newBulkClients(env)
	if err != nil {
		return nil, err
	}
	if err := r.first(ctx, env, cl, o.manyFloor); err != nil {
		return r, err
	}
	if r.RollingCount == 0 {
		logf("many: -many-rolling 0: the rolling half is skipped")
		return r, nil
	}
	if err := r.rolling(ctx, env, cl); err != nil {
		return r, err
	}
	return r, nil
}

// first times manyFirst DCs created at once, then manyFirst Deployments created at once,
// each alone on the cluster, from the first create to the last one Complete; with floor,
// then as many bare run-once pods (floor.go), to the last one Succeeded.
func (r *ManyResult) first(ctx context.Context, env *framework.Env, cl *bulkClients, floor bool) error {
	ns, err := newNamespace(ctx, env, "bench-many-dc-")
	if err != nil {
		return err
	}
	logf("many: %d one-replica DeploymentConfigs created at once in %s", manyFirst, ns)
	procs := startSampling(ctx, env)
	metricsBefore := snapshotMetrics(ctx, env)
	machine, ctl, byBinary := machineCPU(), procs.controllerCPU(), cpuByBinary()
	dcMS, failed, _, err := rolloutAllCounted(ctx, cl, ns, manyFirst, 1, manyFirstLimit, func(i int) error {
		_, err := cl.stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, benchDC(manyName("m", i), 1), metav1.CreateOptions{})
		return err
	})
	r.FirstMachineCPUSeconds, r.FirstCPUs = machineCPU()-machine, runtime.NumCPU()
	r.FirstControllerCPUSeconds = procs.controllerCPU() - ctl
	r.FirstCPUByBinary = topCPU(cpuSince(byBinary, cpuByBinary()), 8)
	r.FirstDCThrottle = throttleSince(ctx, env, metricsBefore, manyFirst)
	procs.stop()
	r.FirstDeployerCPUSeconds = procs.deployerCPU()
	logf("many: CPU while the DCs rolled out: machine %.1f s of %d CPUs, controller %.1f s, deployers at least %.1f s; by binary %s",
		r.FirstMachineCPUSeconds, r.FirstCPUs, r.FirstControllerCPUSeconds, r.FirstDeployerCPUSeconds, cpuList(r.FirstCPUByBinary))
	deleteNamespace(ctx, env, ns)
	if err != nil {
		return fmt.Errorf("%d DeploymentConfigs: %w", manyFirst, err)
	}
	r.FirstDCMS, r.FirstDCFailed = dcMS, failed
	logf("many: %d DeploymentConfigs Complete in %s (%d failed)", manyFirst, ms(dcMS), failed)

	ns, err = newNamespace(ctx, env, "bench-many-deploy-")
	if err != nil {
		return err
	}
	logf("many: %d one-replica Deployments created at once in %s", manyFirst, ns)
	metricsBefore = snapshotMetrics(ctx, env)
	machine, byBinary = machineCPU(), cpuByBinary()
	dMS, err := deploymentsAll(ctx, cl, ns, manyFirst, manyFirstLimit)
	r.FirstDeploymentMachineCPUSeconds = machineCPU() - machine
	r.FirstDeploymentThrottle = throttleSince(ctx, env, metricsBefore, manyFirst)
	r.FirstDeploymentCPUByBinary = topCPU(cpuSince(byBinary, cpuByBinary()), 8)
	logf("many: CPU while the Deployments rolled out: machine %.1f s; by binary %s", r.FirstDeploymentMachineCPUSeconds, cpuList(r.FirstDeploymentCPUByBinary))
	deleteNamespace(ctx, env, ns)
	if err != nil {
		return fmt.Errorf("%d Deployments: %w", manyFirst, err)
	}
	r.FirstDeploymentMS = dMS
	if dMS > 0 {
		r.FirstRatio = dcMS / dMS
	}
	logf("many: %d Deployments available in %s; ratio DC/Deployment %.2f", manyFirst, ms(dMS), r.FirstRatio)
	if !floor {
		logf("many: -many-floor=false: the floor is skipped")
		return nil
	}
	return r.firstFloor(ctx, env, cl)
}

// rolling creates manyRolling DCs, waits for their first rollouts, then changes every
// template at once and waits for every second revision, sampling the controller's and the
// deployers' memory from /proc all along.
func (r *ManyResult) rolling(ctx context.Context, env *framework.Env, cl *bulkClients) error {
	ns, err := newNamespace(ctx, env, "bench-many-roll-")
	if err != nil {
		return err
	}
	defer deleteNamespace(ctx, env, ns)
	procs := startSampling(ctx, env)
	defer procs.stop()

	logf("many: %d one-replica DeploymentConfigs in %s", r.RollingCount, ns)
	create, failed, reasons, err := rolloutAllCounted(ctx, cl, ns, r.RollingCount, 1, manyRollingLimit, func(i int) error {
		_, err := cl.stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, benchDC(manyName("b", i), 1), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("first rollouts of %d: %w", r.RollingCount, err)
	}
	r.RollingCreateMS = create
	r.RollingCreateFailed, r.RollingCreateFailReasons = &failed, reasons
	for _, line := range reasons {
		logf("many: first revision failed: %s", line)
	}
	logf("many: %d first revisions ended in %s (%d failed); changing every template at once", r.RollingCount, ms(create), failed)

	cpuBefore := procs.controllerCPU()
	procs.resetDeployers()
	client := cl.stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	t, err := trackRevisions(ctx, env, ns, 2, r.RollingCount)
	if err != nil {
		return err
	}
	start := time.Now()
	err = parallel(r.RollingCount, bulkWorkers, func(i int) error {
		return changeDC(ctx, client, manyName("b", i), 2, nil)
	})
	if err != nil {
		return fmt.Errorf("changing the templates: %w", err)
	}
	waitErr := t.wait(ctx, manyRollingLimit)
	last, done, fails := t.result()
	r.RollingFailReasons = t.failReasons()
	for _, line := range r.RollingFailReasons {
		logf("many: second revision failed: %s", line)
	}
	r.RollingMS = sinceMS(start, last)
	r.RollingComplete, r.RollingFailed = done, fails
	r.ControllerCPUSeconds = procs.controllerCPU() - cpuBefore
	procs.stop()
	procs.fill(r)
	logf("many: %d of %d second revisions Complete in %s (%d failed); controller peak %.0f MiB, deployer peak %.0f MiB, %d deployers at once",
		done, r.RollingCount, ms(r.RollingMS), fails, r.ControllerPeakMB, r.DeployerPeakMB, r.DeployersAtOnce)
	if waitErr != nil {
		r.Note = waitErr.Error()
		logf("many: %v", waitErr)
	}
	return nil
}

// deploymentsAll creates n one-replica Deployments at once and returns the time from the
// first create to the last one fully available.
func deploymentsAll(ctx context.Context, cl *bulkClients, ns string, n int, limit time.Duration) (float64, error) {
	t, err := trackDeployments(ctx, cl, ns, n)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := parallel(n, bulkWorkers, func(i int) error { return createBenchDeployment(ctx, cl, ns, i) }); err != nil {
		return 0, err
	}
	if err := t.wait(ctx, limit); err != nil {
		return 0, err
	}
	last, _, _ := t.result()
	return sinceMS(start, last), nil
}

// trackDeployments watches ns for n Deployments to be fully available.
func trackDeployments(ctx context.Context, cl *bulkClients, ns string, n int) (*tracker, error) {
	t := newTracker(n)
	list, err := cl.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	t.watch(ctx, list.ResourceVersion, func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
		return cl.kube.AppsV1().Deployments(ns).Watch(ctx, lo)
	}, func(obj any) (string, int) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok || !deploymentDone(d) {
			return "", 0
		}
		return d.Name, 1
	})
	return t, nil
}

// createBenchDeployment creates the i-th one-replica Rolling Deployment of the many part.
func createBenchDeployment(ctx context.Context, cl *bulkClients, ns string, i int) error {
	d := newDeployment(benchCase{Strategy: stagehandv1.DeploymentStrategyTypeRolling, Replicas: 1})
	d.Name = manyName("d", i)
	d.Spec.Selector.MatchLabels = map[string]string{"app": d.Name}
	d.Spec.Template = template(d.Name, 1)
	_, err := cl.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	return err
}

func (r *ManyResult) targets() []Target {
	all := Target{Goal: fmt.Sprintf("%d DCs rolling at once on one controller: all Complete", r.RollingCount),
		Limit: float64(r.RollingCount), Status: "not measured"}
	ctl := Target{Goal: fmt.Sprintf("%d DCs rolling at once: controller peak RSS ≤ 150 MiB", r.RollingCount),
		Limit: controllerRSSTarget, Unit: "MiB", Status: "not measured"}
	dep := Target{Goal: fmt.Sprintf("%d DCs rolling at once: deployer peak RSS ≤ 30 MiB", r.RollingCount),
		Limit: deployerRSSTarget, Unit: "MiB", Status: "not measured"}
	if r.RollingMS > 0 || r.RollingComplete > 0 {
		all.Measured, all.Status = float64(r.RollingComplete), status(r.RollingComplete == r.RollingCount)
		all.Note = fmt.Sprintf("in %s", ms(r.RollingMS))
	}
	if r.ControllerPeakMB > 0 {
		ctl.Measured, ctl.Status = r.ControllerPeakMB, status(r.ControllerPeakMB <= controllerRSSTarget)
	}
	if r.DeployerPeakMB > 0 {
		dep.Measured, dep.Status = r.DeployerPeakMB, status(r.DeployerPeakMB <= deployerRSSTarget)
		dep.Note = fmt.Sprintf("median %.0f MiB over %d processes", r.DeployerMedianPeakMB, r.DeployerProcesses)
	}
	return append(r.floorTargets(), all, ctl, dep)
}

func (r *ManyResult) markdown(p func(format string, args ...any)) {
	p("## Many rollouts at once\n\n")
	p("**First rollouts.** %d one-replica Rolling DeploymentConfigs are created at once (%d concurrent creates) in a\n", r.FirstCount, bulkWorkers)
	p("fresh namespace, timed from the first create to the last revision 1 Complete (the DC's status or the\n")
	p("ReplicaSet's phase annotation, whichever shows first, from watches); the namespace is deleted, and then\n")
	p("as many one-replica Deployments are created the same way, alone, timed to the last one fully available.\n")
	p("Then **the floor**: every DC revision runs a deployer pod, which a Deployment does not, so the least a DC's first\n")
	p("rollout can cost here is a Deployment's rollout plus one such pod's life (create, schedule and bind, service\n")
	p("account token, status updates by the node agent, run, exit). The floor side creates %d one-replica Deployments\n", r.FirstCount)
	p("and %d bare run-once pods of the deployer pod's shape (restartPolicy Never, the `stagehand-deployer` service\n", r.FirstCount)
	p("account's token, the same security context, resources, environment and activeDeadlineSeconds, no owner; the\n")
	p("container is the test app's `exit 0`) together, interleaved, in one fresh namespace, and times them together:\n")
	p("from the first create to the last Deployment available and the last pod Succeeded. CPU is the processes'\n")
	p("utime+stime from `/proc` over each side; requests are `apiserver_request_total`, everyone's.\n\n")
	r.floorMarkdown(p)
	if r.FirstCPUs > 0 {
		p("While the DeploymentConfigs rolled out, the machine was busy for %.1f CPU seconds of the %.1f its %d CPUs had;\n",
			r.FirstMachineCPUSeconds, r.FirstDCMS/1000*float64(r.FirstCPUs), r.FirstCPUs)
		p("the controller used %.1f s and the deployer processes at least %.1f s. The processes alive at the end used: %s.\n",
			r.FirstControllerCPUSeconds, r.FirstDeployerCPUSeconds, cpuList(r.FirstCPUByBinary))
		p("While the Deployments rolled out, the machine was busy for %.1f CPU seconds: %s.\n\n",
			r.FirstDeploymentMachineCPUSeconds, cpuList(r.FirstDeploymentCPUByBinary))
		r.throttleMarkdown(p)
	}
	p("**Rolling at once.** %d one-replica DeploymentConfigs on one controller: created at once, and once their first\n", r.RollingCount)
	p("revisions ended, every template changed at once; timed from the first update to the last revision 2 Complete.\n")
	p("Peak memory is VmHWM from `/proc/<pid>/status`: the controller's over its life, each deployer process's sampled\n")
	p("every 250 ms while it runs (a process shorter than that may be missed). CPU seconds are utime+stime.\n\n")
	p("| | |\n|---|---|\n")
	failedFirst := "failures not recorded by this run"
	if r.RollingCreateFailed != nil {
		failedFirst = fmt.Sprintf("%d failed", *r.RollingCreateFailed)
	}
	p("| first rollouts of %d (created at once) | %s (%s) |\n", r.RollingCount, ms(r.RollingCreateMS), failedFirst)
	p("| %d rolling at once: all revision 2 Complete | %s (%d Complete, %d failed) |\n", r.RollingCount, ms(r.RollingMS), r.RollingComplete, r.RollingFailed)
	p("| controller peak RSS | **%.0f MiB** |\n", r.ControllerPeakMB)
	p("| controller CPU while rolling | %.1f s |\n", r.ControllerCPUSeconds)
	p("| deployer peak RSS (max / median over %d processes) | **%.0f MiB** / %.0f MiB |\n", r.DeployerProcesses, r.DeployerPeakMB, r.DeployerMedianPeakMB)
	p("| deployers running at once (most seen) / their summed RSS then | %d / %.0f MiB |\n", r.DeployersAtOnce, r.DeployersSumPeakMB)
	p("| deployers' CPU while rolling (at least) | %.1f s |\n", r.DeployerCPUSeconds)
	if len(r.RollingCreateFailReasons)+len(r.RollingFailReasons) > 0 {
		p("\nThe failed revisions, by reason, with one message each:\n\n")
		for _, line := range r.RollingCreateFailReasons {
			p("- first rollouts: %s\n", line)
		}
		for _, line := range r.RollingFailReasons {
			p("- rolling at once: %s\n", line)
		}
	}
	if r.Note != "" {
		p("\nNote: %s\n", r.Note)
	}
}

// benchDC is a one-strategy-default Rolling DC of the given replicas, with a template of
// its own (app=<name>).
func benchDC(name string, replicas int32) *stagehandv1.DeploymentConfig {
	dc := newDC(benchCase{Strategy: stagehandv1.DeploymentStrategyTypeRolling, Replicas: replicas})
	dc.Name = name
	dc.Spec.Template = template(name, 1)
	return dc
}

func manyName(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }

// topCPU keeps the n biggest entries of a CPU-by-binary map.
func topCPU(m map[string]float64, n int) map[string]float64 {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return m[names[i]] > m[names[j]] })
	out := map[string]float64{}
	for _, k := range names[:min(n, len(names))] {
		out[k] = m[k]
	}
	return out
}

// cpuList writes a CPU-by-binary map as "name 1.2 s, ...", biggest first.
func cpuList(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return m[names[i]] > m[names[j]] })
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
