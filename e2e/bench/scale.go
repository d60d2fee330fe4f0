package main

// The scale part (issue 38): thousands of DeploymentConfigs on one controller. It creates
// them namespace by namespace, each DC at 0 replicas, and lets every first revision roll
// out for real (a ReplicaSet and a deployer pod each, as any DC has after its first
// rollout). At half of them and at all of them it measures the controller at rest (RSS,
// CPU) and its reaction to one spec change at a time; at the end it kills every
// controller process and times the restart. scalereport.go writes the targets and the
// report.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	// scaleDCs is how many DeploymentConfigs the part creates by default (-scale-dcs).
	scaleDCs = 10000
	// scalePerNamespace is how many DCs one namespace holds. A namespace's DCs are created
	// at once, and its first rollouts end before the next namespace's DCs are created.
	scalePerNamespace = 500
	// scaleReplicas is every DC's spec.replicas: 0, so that no app pod runs. One running
	// pod per DC is a process per DC on the local cluster, which this machine cannot hold
	// by the thousand; the issue allows DCs at 0 (scalereport.go says what differs).
	scaleReplicas int32 = 0
	// scaleChanges is how many DCs change, one at a time, at each checkpoint.
	scaleChanges = 50
	// scaleRest is the window over which the controller's CPU at rest is read.
	scaleRest = 30 * time.Second
	// scaleWaveLimit bounds one namespace's first rollouts; scaleRestartLimit the restart.
	scaleWaveLimit    = 10 * time.Minute
	scaleRestartLimit = 5 * time.Minute
	// scalePoll is how often the restart is polled (processes, /readyz, /metrics).
	scalePoll = 100 * time.Millisecond
	// scaleDCQueue is the DeploymentConfig controller's workqueue, by its metrics name
	// (controller/deploymentconfig.QueueName; e2e does not import the controller).
	scaleDCQueue = "deploymentconfig"
)

// ScaleResult is many DeploymentConfigs on one controller: how long their first rollouts
// took, the controller at rest and its reaction at each checkpoint, and a restart.
type ScaleResult struct {
	DeploymentConfigs int `json:"deploymentConfigs"`
	// Replicas is every DC's spec.replicas.
	Replicas     int32 `json:"replicas"`
	PerNamespace int   `json:"perNamespace"`
	// CPUs is the machine's, for the report.
	CPUs int `json:"cpus"`
	// Seed picked the DCs that change.
	Seed   int64        `json:"seed"`
	Waves  []ScaleWave  `json:"waves"`
	Points []ScalePoint `json:"points"`
	// Restart is nil when the part stopped before it.
	Restart *ScaleRestart `json:"restart,omitempty"`
	Note    string        `json:"note,omitempty"`
}

// ScaleWave is one namespace's DCs, created at once: the time from the first create to
// the last first revision ended, and how many of those failed.
type ScaleWave struct {
	Namespace string  `json:"namespace"`
	DCs       int     `json:"dcs"`
	MS        float64 `json:"ms"`
	Failed    int     `json:"failed"`
}

// ScalePoint is the controller with DeploymentConfigs DCs in its caches, all at rest.
type ScalePoint struct {
	DeploymentConfigs int `json:"deploymentConfigs"`
	// SetupMS sums the waves so far (the measurements between them left out).
	SetupMS float64 `json:"setupMs"`
	// QuietMS is the wait for the apiserver to be quiet before the rest window; Busy says
	// it was not quiet after taxQuietLimit (the window was read anyway).
	QuietMS float64 `json:"quietMs"`
	Busy    bool    `json:"busy,omitempty"`
	// The leader's VmRSS and VmHWM after the rest window, the standby's VmRSS, and the
	// apiserver's VmRSS, from /proc/<pid>/status.
	ControllerRSSMiB float64 `json:"controllerRssMiB"`
	ControllerHWMMiB float64 `json:"controllerHwmMiB"`
	StandbyRSSMiB    float64 `json:"standbyRssMiB,omitempty"`
	APIServerRSSMiB  float64 `json:"apiserverRssMiB,omitempty"`
	// ControllerCPUSeconds is the leader's utime+stime over RestSeconds.
	RestSeconds          float64 `json:"restSeconds"`
	ControllerCPUSeconds float64 `json:"controllerCpuSeconds"`
	// What the DCs left in the cluster: their ReplicaSets and deployer pods by phase.
	ReplicaSets  int            `json:"replicaSets"`
	DeployerPods map[string]int `json:"deployerPods"`
	// Spec change → the new revision's ReplicaSet and deployer pod, per change.
	ReactionTimes
}

func measureScale(ctx context.Context, env *framework.Env, o options) (*ScaleResult, error) {
	r := &ScaleResult{DeploymentConfigs: o.scaleDCs, Replicas: scaleReplicas, PerNamespace: scalePerNamespace, CPUs: runtime.NumCPU(), Seed: o.seed}
	sizes, checkpoints := scalePlan(o.scaleDCs, scalePerNamespace)
	if len(sizes) == 0 {
		return r, fmt.Errorf("-scale-dcs %d: nothing to create", o.scaleDCs)
	}
	if !env.Local() {
		// It reads the controller's and the apiserver's /proc and kills the controller's
		// processes, which only the local cluster runs on this machine.
		r.Note = "not measured: the scale part needs the local cluster, not " + framework.KubeconfigEnv
		logf("scale: %s", r.Note)
		return r, nil
	}
	cl, err := newBulkClients(env)
	if err != nil {
		return nil, err
	}
	var namespaces []string
	defer func() {
		if !o.wantAfter("scale") {
			logf("scale: no part follows: its %d namespaces go with the cluster", len(namespaces))
			return
		}
		deleteNamespaces(ctx, env, namespaces)
	}()
	rng := rand.New(rand.NewPCG(uint64(o.seed), 38))
	changed := map[types.NamespacedName]bool{}
	var all []types.NamespacedName
	var setup float64
	for _, size := range sizes {
		ns, err := newNamespace(ctx, env, "bench-scale-")
		if err != nil {
			return r, err
		}
		namespaces = append(namespaces, ns)
		d, failed, reasons, err := rolloutAllCounted(ctx, cl, ns, size, 1, scaleWaveLimit, func(i int) error {
			_, err := cl.stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, benchDC(manyName("s", i), r.Replicas), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return r, fmt.Errorf("first rollouts in %s: %w", ns, err)
		}
		for _, line := range reasons {
			logf("scale: first revision failed: %s", line)
		}
		setup += d
		r.Waves = append(r.Waves, ScaleWave{Namespace: ns, DCs: size, MS: d, Failed: failed})
		for i := range size {
			all = append(all, types.NamespacedName{Namespace: ns, Name: manyName("s", i)})
		}
		logf("scale: %d of %d DCs: %s's %d first rollouts ended in %s (%d failed)", len(all), o.scaleDCs, ns, size, ms(d), failed)
		if !slices.Contains(checkpoints, len(all)) {
			continue
		}
		p, err := measurePoint(ctx, env, all, pickUnchanged(rng, all, changed, scaleChanges))
		p.SetupMS = setup
		r.Points = append(r.Points, p)
		if err != nil {
			return r, fmt.Errorf("at %d DCs: %w", len(all), err)
		}
	}
	picks := pickUnchanged(rng, all, changed, 1)
	if len(picks) == 0 {
		return r, fmt.Errorf("no DC left unchanged for the restart")
	}
	if r.Restart, err = measureRestart(ctx, env, len(all), picks[0]); err != nil {
		return r, fmt.Errorf("restart: %w", err)
	}
	return r, nil
}

// scalePlan splits n DCs into namespaces of at most per DCs each, with one boundary at
// n/2, and returns their sizes and the checkpoints (the counts measured at): n/2 and n,
// or only n when n/2 is 0.
func scalePlan(n, per int) (sizes, checkpoints []int) {
	split := func(m int) {
		for m > 0 {
			size := min(m, per)
			sizes = append(sizes, size)
			m -= size
		}
	}
	if n <= 0 || per <= 0 {
		return nil, nil
	}
	if half := n / 2; half > 0 {
		split(half)
		checkpoints = append(checkpoints, half)
	}
	split(n - n/2)
	return sizes, append(checkpoints, n)
}

// pickUnchanged picks up to k DCs of all that no earlier pick took, at random, and marks
// them taken.
func pickUnchanged(rng *rand.Rand, all []types.NamespacedName, taken map[types.NamespacedName]bool, k int) []types.NamespacedName {
	var picks []types.NamespacedName
	for _, i := range rng.Perm(len(all)) {
		if len(picks) == k {
			break
		}
		if !taken[all[i]] {
			taken[all[i]] = true
			picks = append(picks, all[i])
		}
	}
	return picks
}

// measurePoint waits until the apiserver is quiet, reads the controller at rest over
// scaleRest, counts what the DCs left, then times a template change of each of picks,
// one at a time.
func measurePoint(ctx context.Context, env *framework.Env, all, picks []types.NamespacedName) (ScalePoint, error) {
	p := ScalePoint{DeploymentConfigs: len(all), RestSeconds: scaleRest.Seconds()}
	apiserver, err := apiserverPID(env)
	if err != nil {
		return p, err
	}
	waited, quiet := waitIdle(ctx, apiserver, "scale: apiserver")
	p.QuietMS, p.Busy = float64(waited.Milliseconds()), !quiet
	leader, standby, err := controllerPIDs(ctx, env)
	if err != nil {
		return p, err
	}
	before, _ := readProc(leader)
	select {
	case <-ctx.Done():
		return p, ctx.Err()
	case <-time.After(scaleRest):
	}
	after, ok := readProc(leader)
	if !ok {
		return p, fmt.Errorf("the leader controller (pid %d) ended during the rest window", leader)
	}
	p.ControllerCPUSeconds = after.cpu - before.cpu
	p.ControllerRSSMiB, p.ControllerHWMMiB = kbToMiB(after.rssKB), kbToMiB(after.hwmKB)
	if s, ok := readProc(standby); ok && standby != 0 {
		p.StandbyRSSMiB = kbToMiB(s.rssKB)
	}
	if a, ok := readProc(apiserver); ok {
		p.APIServerRSSMiB = kbToMiB(a.rssKB)
	}
	if p.ReplicaSets, p.DeployerPods, err = countLeftovers(ctx, env); err != nil {
		return p, err
	}
	logf("scale: at %d DCs, at rest: controller RSS %.0f MiB (peak %.0f), CPU %.2f s over %s; %d ReplicaSets, deployer pods %v",
		len(all), p.ControllerRSSMiB, p.ControllerHWMMiB, p.ControllerCPUSeconds, scaleRest, p.ReplicaSets, p.DeployerPods)

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	first, err := watchRevisionStarts(wctx, env, "")
	if err != nil {
		return p, err
	}
	logf("scale: at %d DCs: changing %d of them one at a time", len(all), len(picks))
	if p.RSCreatedMS, p.DeployerPodMS, err = timeChanges(ctx, env, first, picks, 2); err != nil {
		return p, err
	}
	p.summarize()
	logf("scale: at %d DCs: spec change → deployer pod p50 %s p99 %s max %s",
		len(all), ms(p.DeployerPodP50MS), ms(p.DeployerPodP99MS), ms(p.DeployerPodMaxMS))
	return p, nil
}

// controllerPIDs are the processes of the controller pod that holds the leader Lease and
// of another controller pod (0 when there is none).
func controllerPIDs(ctx context.Context, env *framework.Env) (leader, standby int, err error) {
	name, err := env.Leader(ctx)
	if err != nil || name == "" {
		return 0, 0, fmt.Errorf("no controller holds the leader Lease (%v)", err)
	}
	pods, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).List(ctx, metav1.ListOptions{LabelSelector: framework.ControllerSelector})
	if err != nil {
		return 0, 0, err
	}
	for _, pod := range pods.Items {
		pids := env.PodProcesses(pod.Namespace, pod.Name, controllerBin)
		switch {
		case len(pids) == 0:
		case pod.Name == name:
			leader = pids[0]
		default:
			standby = pids[0]
		}
	}
	if leader == 0 {
		return 0, 0, fmt.Errorf("no process of the leader pod %s on this machine", name)
	}
	return leader, standby, nil
}

// countLeftovers counts the revisions' ReplicaSets and the deployer pods by phase, in
// every namespace, a page at a time.
func countLeftovers(ctx context.Context, env *framework.Env) (int, map[string]int, error) {
	rss, pods := 0, map[string]int{}
	lo := metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel, Limit: 500}
	for {
		list, err := env.Kube.AppsV1().ReplicaSets("").List(ctx, lo)
		if err != nil {
			return 0, nil, err
		}
		rss += len(list.Items)
		if lo.Continue = list.Continue; lo.Continue == "" {
			break
		}
	}
	lo = metav1.ListOptions{LabelSelector: revision.DeployerPods().String(), Limit: 500}
	for {
		list, err := env.Kube.CoreV1().Pods("").List(ctx, lo)
		if err != nil {
			return 0, nil, err
		}
		for _, pod := range list.Items {
			pods[string(pod.Status.Phase)]++
		}
		if lo.Continue = list.Continue; lo.Continue == "" {
			break
		}
	}
	return rss, pods, nil
}

// deleteNamespaces deletes the part's namespaces side by side (deleteNamespace each).
func deleteNamespaces(ctx context.Context, env *framework.Env, namespaces []string) {
	_ = parallel(len(namespaces), len(namespaces), func(i int) error {
		deleteNamespace(ctx, env, namespaces[i])
		return nil
	})
}
