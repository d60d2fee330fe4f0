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
	case strings.Contains(t.Goal, "created at once"):
		why = "every DeploymentConfig rollout runs a pod of its own, the deployer, and a Deployment runs none: here all " +
			"of them start on one machine of 2 CPUs, beside the apiserver, etcd and the node agent, and each needs a " +
			"token, a process and requests of its own (under API cost: the deployer's and the controller's rows)."
		closeIt := "a cluster whose nodes start the deployer pods side by side (the gap here is CPU, not waiting); " +
			"fewer requests per rollout (one event per phase change is part of DESIGN.md §10); a lighter deployer."
		m := res.Many
		if m != nil && m.FirstMachineCPUSeconds > 0 && m.FirstDeploymentMachineCPUSeconds > 0 {
			n := float64(m.FirstCount)
			dc, d := m.FirstMachineCPUSeconds, m.FirstDeploymentMachineCPUSeconds
			why += fmt.Sprintf(" Both sides keep the machine's %d CPUs busy the whole time (%.0f of %.0f CPU seconds for the "+
				"DeploymentConfigs, %.0f of %.0f for the Deployments), so the time ratio is the CPU ratio: %.0f ms of CPU per "+
				"DeploymentConfig rollout against %.0f ms per Deployment, %.1f×. Of the DeploymentConfigs' share the apiserver "+
				"used %.0f s, the deployer processes at least %.0f s (%.0f ms each) and the controller %.0f s.",
				m.FirstCPUs, dc, m.FirstDCMS/1000*float64(m.FirstCPUs), d, m.FirstDeploymentMS/1000*float64(m.FirstCPUs),
				dc/n*1000, d/n*1000, dc/d, m.FirstCPUByBinary["kube-apiserver"], m.FirstDeployerCPUSeconds,
				m.FirstDeployerCPUSeconds/n*1000, m.FirstControllerCPUSeconds)
			closeIt = fmt.Sprintf("on this machine, only a rollout that costs at most %.0f ms of CPU in all (twice the "+
				"Deployment's), while the deployer process alone costs about %.0f ms. %s That is out of reach while "+
				"every revision runs a deployer pod (DESIGN.md §5) on the same CPUs as the control plane. On a cluster whose "+
				"nodes have CPUs of their own, the deployer processes leave the control plane's CPUs; fewer requests per "+
				"rollout and a lighter deployer narrow the rest.", 2*d/n*1000, m.FirstDeployerCPUSeconds/n*1000, floorSentence(m))
		} else if m != nil && m.DeployerCPUSeconds > 0 {
			why += fmt.Sprintf(" In the 1,000-DC run the deployers used at least %.0f s of CPU in all, up to %d at once.",
				m.DeployerCPUSeconds, m.DeployersAtOnce)
		}
		return why, closeIt
	case strings.HasPrefix(t.Goal, "kube-apiserver CPU"):
		return "the apiserver serves a DeploymentConfig rollout's own objects (the DC with its CEL rules, its status " +
				"writes, the phase annotations of the revision) and the whole life of its deployer pod, which a Deployment " +
				"does not have. " + floorSentence(res.Many),
			"below the floor, nothing within DESIGN.md §5: a revision without a deployer pod would be a change of " +
				"design. Above it, fewer and cheaper writes of the DC's status and the revision's phase, and fewer " +
				"requests of the deployer."
	case strings.Contains(t.Goal, "RSS"):
		return "the process's peak resident memory is above the limit.", "a smaller client scheme, or a lower GOGC."
	case strings.Contains(t.Goal, "all Complete"):
		return "some rollouts failed or did not finish; performance.json has the counts.",
			"the failures' reasons (the revisions' status-reason annotations) show what to fix."
	case strings.Contains(t.Goal, "hook overhead"):
		return "each hook pod pays a pod start, as the deployer pod does.", "a faster pod start on the node."
	case strings.HasPrefix(t.Goal, "cluster tax") && res.Tax != nil:
		return res.Tax.explain()
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

// floorSentence states the measured floor of a DC rollout: the Deployment's cost plus a
// bare run-once pod's, from the many part's third side.
func floorSentence(m *ManyResult) string {
	if m == nil {
		return ""
	}
	f := manyFloor(m)
	if f == nil || f.APIServerCPURatio == 0 {
		return "(The bare-pod floor was not measured in this run: -many-floor.)"
	}
	return fmt.Sprintf("The floor measured in this run, a Deployment rollout plus one bare run-once pod of the deployer "+
		"pod's shape, already takes %.2f× the Deployments' time and %.0f ms of apiserver CPU per rollout, %.2f× the "+
		"Deployment's; the DeploymentConfigs used %.0f ms.", f.Ratio, f.APIServerCPUMS, f.APIServerCPURatio,
		m.FirstCPUByBinary["kube-apiserver"]/float64(max(1, m.FirstCount))*1000)
}

// triedFor is what issue 23 tried against a target, with what each try moved, measured
// on this 2-CPU machine in separate runs of `-only many -many-rolling 0` while it was
// worked on (runs of the same code differed by up to 15% in apiserver CPU per rollout).
func triedFor(t Target) string {
	switch {
	case strings.Contains(t.Goal, "created at once"), strings.HasPrefix(t.Goal, "kube-apiserver CPU"):
		return "(1) no client-side limit: `--kube-api-qps=5000` moved the DCs from 25.4 s to 25.5 s, and the new default " +
			"(no limit under Priority and Fairness) from 31.8–37.5 s to 33.9–35.9 s: nothing, since the limiter had held " +
			"the controller back 0.0 s; (2) Priority and Fairness on or off: 33.9 s and 131 ms of apiserver CPU per rollout " +
			"against 33.5 s and 128 ms, nothing; (3) a FlowSchema that moved the controller to `workload-high`: worse, " +
			"37.3 s against 33.9 s, the controller's requests waited 21 ms instead of 1.1 ms (not shipped); (4) fewer " +
			"requests: the completion proof reads the cache first (ReplicaSet GETs per rollout 2.2–2.5 → 1.5) and one " +
			"event less per revision; the total stayed 32–35 requests and 111–138 ms of apiserver CPU per rollout on " +
			"both the old and the new code, because how many phase writes coalesce (DC status 3.9–4.7, ReplicaSet " +
			"updates 2.3–3.1 per rollout) swings more from run to run than the cut."
	case strings.Contains(t.Goal, "Recreate"):
		return "the deployer goes on once no old pod runs instead of once the old pod objects are deleted: Recreate at " +
			"10 replicas went from 2.07× to 1.69×, at 100 replicas from 1.56× to 1.27× (minReadySeconds 0)."
	}
	return ""
}
