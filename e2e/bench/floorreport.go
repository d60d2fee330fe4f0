package main

import "fmt"

// ManyFloor is the floor of a DC's first rollout on this machine: the Deployment's cost
// plus one bare run-once pod's (floor.go), the least a rollout that runs a deployer pod
// and then scales a ReplicaSet can cost here.
type ManyFloor struct {
	// MS is the Deployments' time plus the bare pods' time, for manyFirst of each.
	MS float64 `json:"ms"`
	// Ratio is MS over the Deployments' time: the DC/Deployment ratio of the floor.
	Ratio float64 `json:"ratio"`
	// APIServerCPUMS is kube-apiserver CPU per rollout, Deployment's plus bare pod's, in
	// milliseconds; APIServerCPURatio is that over the Deployment's. Both are 0 when the
	// CPU by binary was not read.
	APIServerCPUMS    float64 `json:"apiserverCpuMsPerRollout,omitempty"`
	APIServerCPURatio float64 `json:"apiserverCpuRatio,omitempty"`
	// RequestsPerRollout is the apiserver's requests per rollout, Deployment's plus bare
	// pod's (0 when the metrics were not read).
	RequestsPerRollout float64 `json:"requestsPerRollout,omitempty"`
}

// manyFloor adds the bare pods' cost to the Deployments'; nil when either side has no time.
func manyFloor(r *ManyResult) *ManyFloor {
	if r.FirstDeploymentMS <= 0 || r.FirstBarePodMS <= 0 {
		return nil
	}
	f := &ManyFloor{MS: r.FirstDeploymentMS + r.FirstBarePodMS}
	f.Ratio = f.MS / r.FirstDeploymentMS
	d, dok := perObjectMS(r.FirstDeploymentCPUByBinary, "kube-apiserver", r.FirstCount)
	p, pok := perObjectMS(r.FirstBarePodCPUByBinary, "kube-apiserver", r.FirstCount)
	if dok && pok && d > 0 {
		f.APIServerCPUMS = d + p
		f.APIServerCPURatio = f.APIServerCPUMS / d
	}
	if r.FirstDeploymentThrottle != nil && r.FirstBarePodThrottle != nil {
		f.RequestsPerRollout = r.FirstDeploymentThrottle.TotalPerRollout + r.FirstBarePodThrottle.TotalPerRollout
	}
	return f
}

// perObjectMS is one binary's CPU per object in milliseconds, from CPU seconds by binary.
func perObjectMS(cpu map[string]float64, binary string, n int) (float64, bool) {
	v, ok := cpu[binary]
	if !ok || n <= 0 {
		return 0, false
	}
	return v / float64(n) * 1000, true
}

// floorMarkdown writes the three sides of the first rollouts per object, and the floor.
func (r *ManyResult) floorMarkdown(p func(format string, args ...any)) {
	if r.FirstBarePodMS <= 0 {
		return
	}
	p("**The deployer pod's floor.** Every DC revision runs a deployer pod, which a Deployment does not. To see what\n")
	p("one such pod's life costs by itself here (create, schedule and bind, service account token, status updates by\n")
	p("the node agent, run, exit), %d bare run-once pods of the deployer pod's shape (restartPolicy Never, the\n", r.FirstCount)
	p("`stagehand-deployer` service account's token, the same security context, resources, environment and\n")
	p("activeDeadlineSeconds, no owner) whose container is the test app's `exit 0` are then created the same way, alone,\n")
	p("in a fresh namespace, timed from the first create to the last one Succeeded.\n\n")
	cell := func(cpu map[string]float64, binary string) string {
		if v, ok := perObjectMS(cpu, binary, r.FirstCount); ok {
			return fmt.Sprintf("%.1f ms", v)
		}
		return "not measured"
	}
	machine := func(seconds float64) string {
		if seconds <= 0 || r.FirstCount <= 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.1f ms", seconds/float64(r.FirstCount)*1000)
	}
	requests := func(t *Throttle) string {
		if t == nil {
			return "not measured"
		}
		return fmt.Sprintf("%.1f", t.TotalPerRollout)
	}
	p("| %d created at once | time to the last one done | kube-apiserver CPU per object | etcd CPU per object | machine CPU per object | apiserver requests per object |\n", r.FirstCount)
	p("|---|---|---|---|---|---|\n")
	p("| %d DeploymentConfigs | %s | %s | %s | %s | %s |\n", r.FirstCount, ms(r.FirstDCMS),
		cell(r.FirstCPUByBinary, "kube-apiserver"), cell(r.FirstCPUByBinary, "etcd"), machine(r.FirstMachineCPUSeconds), requests(r.FirstDCThrottle))
	p("| %d Deployments | %s | %s | %s | %s | %s |\n", r.FirstCount, ms(r.FirstDeploymentMS),
		cell(r.FirstDeploymentCPUByBinary, "kube-apiserver"), cell(r.FirstDeploymentCPUByBinary, "etcd"), machine(r.FirstDeploymentMachineCPUSeconds), requests(r.FirstDeploymentThrottle))
	p("| %d bare run-once pods (the deployer pod's floor) | %s | %s | %s | %s | %s |\n\n", r.FirstCount, ms(r.FirstBarePodMS),
		cell(r.FirstBarePodCPUByBinary, "kube-apiserver"), cell(r.FirstBarePodCPUByBinary, "etcd"), machine(r.FirstBarePodMachineCPUSeconds), requests(r.FirstBarePodThrottle))
	if r.FirstBarePodFailed > 0 {
		p("%d of the bare pods Failed: %v.\n\n", r.FirstBarePodFailed, r.FirstBarePodFailReasons)
	}
	f := r.Floor
	if f == nil {
		return
	}
	p("Floor of a DC rollout = Deployment + bare pod: **%s**, i.e. **%.2f×** the Deployments' time", ms(f.MS), f.Ratio)
	if f.APIServerCPUMS > 0 {
		p("; apiserver CPU %.1f ms per rollout = %.2f× the Deployment's", f.APIServerCPUMS, f.APIServerCPURatio)
	}
	p(".\n")
	if f.RequestsPerRollout > 0 {
		p("Apiserver requests of the floor: %.1f per rollout.\n", f.RequestsPerRollout)
	}
	if f.Ratio <= manyRatioTarget {
		p("The floor is under the DC/Deployment target of %.0f×: it leaves %.2f× (%s) for the rest of a DC's work; the DCs took %.2f×.\n",
			manyRatioTarget, manyRatioTarget-f.Ratio, ms((manyRatioTarget-f.Ratio)*r.FirstDeploymentMS), r.FirstRatio)
	} else {
		p("The floor alone is over the DC/Deployment target of %.0f× on this machine; the DCs took %.2f×.\n", manyRatioTarget, r.FirstRatio)
	}
	listed := 0.0
	for _, v := range r.FirstBarePodCPUByBinary {
		listed += v
	}
	p("While the bare pods ran, the machine was busy for %.1f CPU seconds of the %.1f its %d CPUs had; the processes\n",
		r.FirstBarePodMachineCPUSeconds, r.FirstBarePodMS/1000*float64(r.FirstCPUs), r.FirstCPUs)
	p("alive at the end used: %s (the node agent runs in the bench's process). The other %.1f s went to\n", cpuList(r.FirstBarePodCPUByBinary), r.FirstBarePodMachineCPUSeconds-listed)
	p("processes that had ended by then, each pod's shim and test app among them.\n")
	if t := r.FirstBarePodThrottle; t != nil {
		p("The apiserver's most frequent requests per bare pod: %s.\n", requestsList(t.RequestsPerRollout))
	}
	p("\n")
}
