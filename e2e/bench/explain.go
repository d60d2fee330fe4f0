package main

import (
	"fmt"
	"strings"
)

// missedSection writes "## Where a target is missed" for the targets this run missed: by
// how much, why (from this run's own measurements where it has them), and what would
// close the gap. The reasons are the analysis of the runs behind docs/performance.md;
// they name the step that the timeline shows to be the gap, not a guess.
func missedSection(p func(format string, args ...any), res *Results) {
	var missed []Target
	for _, t := range res.Targets {
		if t.Status == "missed" {
			missed = append(missed, t)
		}
	}
	if len(missed) == 0 {
		return
	}
	p("## Where a target is missed\n\n")
	for _, t := range missed {
		why, closeIt := explain(t, res)
		p("### %s\n\n", t.Goal)
		p("- **By how much:** %s.\n", overBy(t))
		p("- **Why:** %s\n", why)
		p("- **What would close it:** %s\n", closeIt)
		if tried := triedFor(t); tried != "" {
			p("- **Tried:** %s\n", tried)
		}
		p("\n")
	}
}

// overBy says how far the measured value is from the limit.
func overBy(t Target) string {
	if t.Unit == "" || t.Limit == 0 {
		return fmt.Sprintf("measured %s against %s", t.format(), trimFloat(t.Limit))
	}
	limit := t
	limit.Measured = t.Limit
	return fmt.Sprintf("measured %s against at most %s, %.0f%% over", t.format(), limit.format(), (t.Measured/t.Limit-1)*100)
}

// explain gives the reason for a missed target and what would close it.
func explain(t Target, res *Results) (why, closeIt string) {
	const deployerStart = "the start of the deployer pod: scheduling, the node agent's token request and process start, " +
		"and the deployer's own start (its exec → first API call is under Binaries)"
	const warm = "What remains is the deployer pod's start. A deployer that already runs when the revision is created " +
		"(a warm deployer, or the controller taking the first step itself) would remove it, but DESIGN.md's one deployer " +
		"pod per revision rules both out; within that contract, a smaller deployer (typed clients for core and apps only, " +
		"not the whole clientset) and a faster pod start on the node are what is left."
	switch {
	case strings.HasPrefix(t.Goal, "ratio"):
		for _, c := range res.Cases {
			if c.Name != t.Case || len(c.Rounds) == 0 {
				continue
			}
			m := medianRound(c.Rounds)
			if c.Strategy == "Recreate" {
				return fmt.Sprintf("a DeploymentConfig's rollout is the Deployment's work plus %s, and Recreate pays for it "+
						"before anything moves. In this case the deployer pod was Running %s after the change and scaled the old "+
						"revision to 0 at %s; the new revision was scaled up at %s, once no old pod ran (DESIGN.md §6), "+
						"while the whole Deployment took %s.", deployerStart, ms(m.DeployerRunningMS), ms(m.OldAtZeroMS),
						ms(m.FirstScaleMS), ms(c.DeploymentMedianMS)) + quantized(c),
					"the deployer pod's start (see the Rolling cases). The wait between the old revision at 0 and the new " +
						"one's first scale is already the Deployment controller's: the deployer goes on once no old pod runs " +
						"(issue 23; before, it waited for the old pod objects to be deleted). " + warm
			}
			return fmt.Sprintf("a DeploymentConfig's rollout is the Deployment's work plus %s. In this case the deployer pod "+
				"was Running %s after the change and scaled first at %s, while the whole Deployment took %s; from the first scale "+
				"to the old revision at 0 took %s.", deployerStart, ms(m.DeployerRunningMS), ms(m.FirstScaleMS),
				ms(c.DeploymentMedianMS), ms(m.OldAtZeroMS-m.FirstScaleMS)) + quantized(c), warm
		}
		return "the case's rounds are not in this run.", warm
	case strings.HasPrefix(t.Goal, "fixed overhead"):
		return fmt.Sprintf("the first scale waits for %s.", deployerStart), warm
	case strings.Contains(t.Goal, "controller reaction"):
		return "the p99 is a sync that waited in the queue behind others, or behind the client's rate limit, while " +
				"the apiserver was busy with the other DeploymentConfigs' writes.",
			"more workers (`--dc-workers`) or a higher client limit (`--kube-api-qps`, `--kube-api-burst`) on a " +
				"machine with CPU to spare; on this one the apiserver is the limit (docs/controller.md, Choosing the limits)."
	case strings.Contains(t.Goal, "first rollouts at once"):
		return aboveFloor(res.Many), "less CPU per rollout above the floor: the deployer process's own work (a smaller " +
			"deployer that reads less before its first write), fewer and cheaper writes of the DC's status and the " +
			"revision's phase, and the controller's syncs. The floor itself is out of reach within DESIGN.md §5 (one " +
			"deployer pod per revision)."
	case strings.HasPrefix(t.Goal, "kube-apiserver CPU"):
		return "the apiserver serves a DeploymentConfig rollout's own objects (the DC with its CEL rules, its status " +
				"writes, the phase annotations of the revision) and the deployer's reads and writes, which the floor does " +
				"not have. " + floorSentence(res.Many),
			"fewer and cheaper requests above the floor: DC status writes that evaluate fewer CEL rules, fewer phase " +
				"writes and events, and the deployer's reads served from one list."
	case strings.Contains(t.Goal, "RSS"):
		return "the process's peak resident memory is above the limit.", "a smaller client scheme, or a lower GOGC."
	case strings.Contains(t.Goal, "all Complete"):
		return "some rollouts failed or did not finish; performance.json has the counts.",
			"the failures' reasons (the revisions' status-reason annotations) show what to fix."
	case strings.Contains(t.Goal, "hook overhead"):
		return "each hook pod pays a pod start, as the deployer pod does.", "a faster pod start on the node."
	case strings.HasPrefix(t.Goal, "cluster tax") && res.Tax != nil:
		return res.Tax.explain()
	case strings.HasPrefix(t.Goal, "deployer binary"):
		return "the deployer links client-go's whole clientset and its scheme, which registers every built-in API " +
				"group; typed clients for core and apps alone still import that scheme.",
			"a deployer client over a scheme of core/v1 and apps/v1 only; the strategy SDK's KubeClients takes " +
				"kubernetes.Interface, so custom strategy images would have to change with it."
	case strings.Contains(t.Goal, "API writes"):
		return "the table under API cost lists the writes by identity.", "removing the writes that only one side makes."
	}
	return "no analysis recorded for this target.", "—"
}

// quantized explains, for a case with minReadySeconds, why a lag of a few hundred
// milliseconds can cost whole seconds.
func quantized(c CaseResult) string {
	if c.MinReadySeconds == 0 {
		return ""
	}
	return fmt.Sprintf(" With minReadySeconds %d, a wave of pods becomes available minReadySeconds after its Ready "+
		"condition's lastTransitionTime, which has second precision, so availability comes on whole seconds: both "+
		"sides share the scheduler and the node, the DeploymentConfig's pods of each wave queue behind the Deployment's, "+
		"and a wave that is ready a few hundred milliseconds later often waits one more second.", c.MinReadySeconds)
}

// floorSentence states the measured floor of a DC rollout and the DCs' figures against it.
func floorSentence(m *ManyResult) string {
	if m == nil {
		return ""
	}
	f := manyFloor(m)
	if f == nil || f.APIServerCPUMS == 0 {
		return "(The floor was not measured in this run: -many-floor.)"
	}
	return fmt.Sprintf("The floor measured in this run, Deployments and bare run-once pods of the deployer pod's shape "+
		"created together, took %.2f× the Deployments' time and %.0f ms of apiserver CPU per rollout, %.2f× the "+
		"Deployment's; the DeploymentConfigs used %.0f ms, %.2f× the floor's.", f.DeploymentRatio, f.APIServerCPUMS,
		f.DeploymentAPIServerCPURatio, f.DCAPIServerCPURatio*f.APIServerCPUMS, f.DCAPIServerCPURatio)
}

// aboveFloor says where the DCs' first rollouts spent the CPU that the floor did not.
func aboveFloor(m *ManyResult) string {
	why := "every DeploymentConfig rollout runs the Deployment's work plus a deployer pod; the floor runs a bare pod " +
		"in its place, whose process exits at once, while the deployer reads its inputs, scales the ReplicaSet, " +
		"watches its pods and writes the revision's phase, and the controller writes the DC's status."
	if m == nil || m.FirstFloorMachineCPUSeconds <= 0 || m.FirstMachineCPUSeconds <= 0 || m.FirstCount == 0 {
		return why
	}
	n := float64(m.FirstCount)
	dc, fl := m.FirstMachineCPUSeconds/n*1000, m.FirstFloorMachineCPUSeconds/n*1000
	return why + fmt.Sprintf(" Both sides keep the machine's %d CPUs busy, so the time ratio follows the CPU ratio: %.0f ms "+
		"of machine CPU per DC rollout against %.0f ms per floor rollout (%.2f×). Of the DCs' CPU, the apiserver used "+
		"%.0f ms per rollout (the floor's %.0f ms), the deployer processes at least %.0f ms and the controller %.0f ms.",
		m.FirstCPUs, dc, fl, dc/fl, m.FirstCPUByBinary["kube-apiserver"]/n*1000, m.FirstFloorCPUByBinary["kube-apiserver"]/n*1000,
		m.FirstDeployerCPUSeconds/n*1000, m.FirstControllerCPUSeconds/n*1000)
}

// triedFor is what issue 23 tried against a target, with what each try moved, measured
// on this 2-CPU machine in separate runs of `-only many -many-rolling 0` while it was
// worked on (runs of the same code differed by up to 15% in apiserver CPU per rollout).
func triedFor(t Target) string {
	switch {
	case strings.Contains(t.Goal, "first rollouts at once"), strings.HasPrefix(t.Goal, "kube-apiserver CPU"):
		return "(1) no client-side limit: `--kube-api-qps=5000` moved the DCs from 25.4 s to 25.5 s, and the new default " +
			"(no limit under Priority and Fairness) from 31.8–37.5 s to 33.9–35.9 s: nothing, since the limiter had held " +
			"the controller back 0.0 s; (2) Priority and Fairness on or off: 33.9 s and 131 ms of apiserver CPU per rollout " +
			"against 33.5 s and 128 ms, nothing; (3) a FlowSchema that moved the controller to `workload-high`: worse, " +
			"37.3 s against 33.9 s, the controller's requests waited 21 ms instead of 1.1 ms (not shipped); (4) fewer " +
			"requests: the completion proof reads the cache first (ReplicaSet GETs per rollout 2.2–2.5 → 1.5) and one " +
			"event less per revision; the total stayed 32–35 requests and 111–138 ms of apiserver CPU per rollout on " +
			"both the old and the new code, because how many phase writes coalesce (DC status 3.9–4.7, ReplicaSet " +
			"updates 2.3–3.1 per rollout) swings more from run to run than the cut. Issue 38, against the floor: (5) a CPU " +
			"profile of the apiserver during the DCs' first rollouts put the DC /status updates at 17% of its CPU, half of " +
			"it in the CEL validation of the DC's rules, which the apiserver evaluates on status updates too; the VAP " +
			"plugin took 6% (2% while the floor ran); (6) status writes spaced while a rollout runs (--status-interval " +
			"5s, docs/controller.md): DC status writes per first rollout 4.4 → 3.6, apiserver CPU per DC rollout 122.9 → 105.4 ms, the DCs' time " +
			"32.9 → 28.5 s (medians of 3 runs, interleaved with the old controller); (7) the ceiling of any CEL rework: " +
			"the same many part with every one of the DC CRD's 122 x-kubernetes-validations rules removed (not " +
			"shippable: it is the admission contract) took the apiserver CPU per DC rollout from 100.2 to 83.6 ms " +
			"(2.07× → 1.73× the floor) and the DCs' time from 1.98× to 1.76× the floor's (medians of 3 runs each, " +
			"interleaved, `stagehand-bench -only many -many-rolling 0`), so no rework of the rules reaches 1.3× or 1.15×."
	case strings.Contains(t.Goal, "Recreate"):
		return "the deployer goes on once no old pod runs instead of once the old pod objects are deleted: Recreate at " +
			"10 replicas went from 2.07× to 1.69×, at 100 replicas from 1.56× to 1.27× (minReadySeconds 0)."
	}
	return ""
}
