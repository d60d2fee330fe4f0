package main

// The scale part's targets and its section of the report (scale.go measures).

import (
	"fmt"
	"sort"
	"strings"
)

// The goals and the DC counts they are set at.
const (
	scaleRSSTarget      = 500.0 // MiB, the controller's RSS at rest
	scaleRSSAt          = 10000
	scaleReactionTarget = 100.0 // ms, p99 of spec change → deployer pod created
	scaleReactionAt     = 5000
)

// pointAtLeast is the measured point with the fewest DCs that has at least n, or nil.
func pointAtLeast(points []ScalePoint, n int) *ScalePoint {
	var best *ScalePoint
	for i := range points {
		p := &points[i]
		if p.DeploymentConfigs >= n && (best == nil || p.DeploymentConfigs < best.DeploymentConfigs) {
			best = p
		}
	}
	return best
}

func (r *ScaleResult) targets() []Target {
	rss := Target{Goal: fmt.Sprintf("%d DCs on one controller: its RSS at rest ≤ 500 MiB", scaleRSSAt),
		Limit: scaleRSSTarget, Unit: "MiB", Status: "not measured"}
	if p := pointAtLeast(r.Points, scaleRSSAt); p != nil && p.ControllerRSSMiB > 0 {
		rss.Measured, rss.Status = p.ControllerRSSMiB, status(p.ControllerRSSMiB <= scaleRSSTarget)
		rss.Note = fmt.Sprintf("at %d DCs of %d replicas; peak %.0f MiB", p.DeploymentConfigs, r.Replicas, p.ControllerHWMMiB)
	} else if n := len(r.Points); n > 0 {
		rss.Note = fmt.Sprintf("this run went to %d DCs (%.0f MiB there): -scale-dcs %d measures it", r.Points[n-1].DeploymentConfigs, r.Points[n-1].ControllerRSSMiB, scaleRSSAt)
	}
	reaction := Target{Goal: fmt.Sprintf("controller reaction at %d DCs: spec change → deployer pod created, p99 ≤ 100 ms", scaleReactionAt),
		Limit: scaleReactionTarget, Unit: "ms", Status: "not measured"}
	if p := pointAtLeast(r.Points, scaleReactionAt); p != nil && len(p.DeployerPodMS) > 0 {
		reaction.Measured, reaction.Status = p.DeployerPodP99MS, status(p.DeployerPodP99MS <= scaleReactionTarget)
		reaction.Note = fmt.Sprintf("at %d DCs: p50 %s, %d changes", p.DeploymentConfigs, ms(p.DeployerPodP50MS), len(p.DeployerPodMS))
	} else if n := len(r.Points); n > 0 {
		reaction.Note = fmt.Sprintf("this run went to %d DCs (p99 %s there): -scale-dcs %d measures it", r.Points[n-1].DeploymentConfigs, ms(r.Points[n-1].DeployerPodP99MS), 2*scaleReactionAt)
	}
	return []Target{rss, reaction}
}

func (r *ScaleResult) markdown(p func(format string, args ...any)) {
	p("## %d DeploymentConfigs on one controller\n\n", r.DeploymentConfigs)
	p("The DeploymentConfigs are Rolling, at %d replicas from the start, in namespaces of %d: each namespace's DCs are\n", r.Replicas, r.PerNamespace)
	p("created at once (%d concurrent creates), and its first rollouts end before the next namespace's start. Every\n", bulkWorkers)
	p("first revision rolls out for real, so each DC leaves what any DC leaves after its first rollout: its ReplicaSet\n")
	p("`<name>-1` (at 0 replicas, its phase Complete) and its deployer pod, Succeeded and kept, as the controller keeps\n")
	p("them until the revision is pruned; a DC at 0 replicas still runs a deployer pod for each revision.\n\n")
	p("**What differs from DCs with running pods.** There are no app pods. On this local cluster every running pod is a\n")
	p("process of its own, which a machine of %d CPUs cannot hold by the thousand, and the issue allows DCs at 0.\n", r.CPUs)
	p("The controller caches every pod of the cluster but the deployer and hook pods (its DeferPolicy informer), so with\n")
	p("one running pod per DC its RSS would be higher than here by what that many pods cost in its cache; its reaction\n")
	p("and restart would also see those pods' watch events.\n\n")
	p("At each checkpoint the bench waits until the apiserver is quiet, then reads the leader's `VmRSS` and `VmHWM` (its\n")
	p("peak over its life, which includes the creation waves) from `/proc/<pid>/status`, and its CPU (utime+stime) over\n")
	p("%.0f s. Then %d DCs, picked by a random generator with seed %d among those not changed before, get a template\n", r.restSeconds(), r.changes(), r.Seed)
	p("change one at a time, each once the previous one's rollout is Complete, timed from the update's send to the first\n")
	p("watch event of the new ReplicaSet and of its deployer pod.")
	if n := r.changes(); n < 100 {
		p(" The p99 is the nearest rank: of %d changes, the slowest.", n)
	}
	p("\n\n")
	p("| DCs | first rollouts so far | controller RSS at rest (peak) | standby RSS | controller CPU at rest | apiserver RSS | ReplicaSets / deployer pods |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, pt := range r.Points {
		p("| %d | %s | **%.0f MiB** (%.0f MiB) | %.0f MiB | %.2f s over %.0f s (%.1f%% of a CPU) | %.0f MiB | %d / %s |\n",
			pt.DeploymentConfigs, ms(pt.SetupMS), pt.ControllerRSSMiB, pt.ControllerHWMMiB, pt.StandbyRSSMiB,
			pt.ControllerCPUSeconds, pt.RestSeconds, 100*pt.ControllerCPUSeconds/max(pt.RestSeconds, 1), pt.APIServerRSSMiB,
			pt.ReplicaSets, phaseCounts(pt.DeployerPods))
	}
	for _, pt := range r.Points {
		if pt.Busy {
			p("\nAt %d DCs the apiserver was still busy after %s of waiting; the rest was read anyway.\n", pt.DeploymentConfigs, taxQuietLimit)
		}
	}
	p("\n| DCs | spec change → ReplicaSet p50 / p99 | → deployer pod p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, pt := range r.Points {
		p("| %d | %s / %s | %s | **%s** | %s |\n", pt.DeploymentConfigs, ms(pt.RSCreatedP50MS), ms(pt.RSCreatedP99MS),
			ms(pt.DeployerPodP50MS), ms(pt.DeployerPodP99MS), ms(pt.DeployerPodMaxMS))
	}
	p("\nThe first rollouts took %s for %d DCs over %d namespaces (%s per DC; %d failed). The ReplicaSets and deployer\n",
		ms(r.setupMS()), r.created(), len(r.Waves), ms(r.setupMS()/float64(max(r.created(), 1))), r.failed())
	p("pods at rest include the second revisions of the DCs changed at an earlier checkpoint. The namespaces hold %d DCs\n", r.PerNamespace)
	p("each: the controller lists a DC's revisions from its cache by namespace and label, so more DCs in one namespace\n")
	p("would make each of those lists longer.\n\n")
	if x := r.Restart; x != nil {
		p("**Restart.** With %d DCs in the cluster, every controller process (%d: the leader and the standby) is killed\n", x.DeploymentConfigs, x.Killed)
		p("with SIGKILL, as a crash would; the node agent restarts the containers after its back-off of 1 s (a kubelet's\n")
		p("first is 10 s). At once, while none runs, one DC's template changes. Each step is timed from the kill to the first\n")
		p("poll (every %s) that saw it: /readyz of each controller pod, and the leader's /metrics.\n\n", scalePoll)
		p("| step | after the kill |\n|---|---|\n")
		p("| a new controller process runs | %s |\n", ms(x.ProcessMS))
		p("| a controller answers /readyz (a standby is ready too) | %s |\n", ms(x.ReadyMS))
		p("| one leads (`ok: leader`); the dead leader's Lease was valid %s more | %s |\n", ms(x.LeaseLeftMS), ms(x.LeaderMS))
		p("| its caches have synced (`stagehand_rollouts` appears) | **%s** |\n", ms(x.SyncedMS))
		p("| its queues took every DC and are empty (`workqueue_depth` 0) | **%s** |\n", ms(x.DrainedMS))
		p("| the change sent at %s: its deployer pod created | %s |\n", ms(x.ChangeSentMS), ms(x.DeployerPodMS))
		p("| the new leader's RSS then | %.0f MiB |\n", x.RSSMiB)
		if x.Note != "" {
			p("\nNote: %s\n", x.Note)
		}
	}
	if r.Note != "" {
		p("\nNote: %s\n", r.Note)
	}
}

func (r *ScaleResult) restSeconds() float64 {
	if len(r.Points) > 0 {
		return r.Points[0].RestSeconds
	}
	return scaleRest.Seconds()
}

// changes is how many DCs changed at each checkpoint.
func (r *ScaleResult) changes() int {
	if len(r.Points) > 0 {
		return len(r.Points[0].DeployerPodMS)
	}
	return scaleChanges
}

func (r *ScaleResult) setupMS() (sum float64) {
	for _, w := range r.Waves {
		sum += w.MS
	}
	return sum
}

func (r *ScaleResult) created() (n int) {
	for _, w := range r.Waves {
		n += w.DCs
	}
	return n
}

func (r *ScaleResult) failed() (n int) {
	for _, w := range r.Waves {
		n += w.Failed
	}
	return n
}

// phaseCounts writes deployer pods by phase as "9990 Succeeded, 10 Failed", the most
// frequent first.
func phaseCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	phases := make([]string, 0, len(m))
	for k := range m {
		phases = append(phases, k)
	}
	sort.Slice(phases, func(i, j int) bool {
		return m[phases[i]] > m[phases[j]] || m[phases[i]] == m[phases[j]] && phases[i] < phases[j]
	})
	parts := make([]string, 0, len(phases))
	for _, k := range phases {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}
