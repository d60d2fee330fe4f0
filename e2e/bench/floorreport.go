package main

import "fmt"

// The goals for manyFirst first rollouts at once, against the floor measured in the
// same run (issue 38).
const (
	floorTimeTarget = 1.15
	floorCPUTarget  = 1.3
)

// ManyFloor is the floor of a DC's first rollout on this machine, from the floor side
// (floor.go): a Deployment's rollout plus one bare run-once pod's life, measured together,
// and the DCs' and the Deployments' figures as ratios to it.
type ManyFloor struct {
	// MS is the floor side's time, for manyFirst of each.
	MS float64 `json:"ms"`
	// DCRatio is the DCs' time over the floor's; DeploymentRatio the floor's over the
	// Deployments'.
	DCRatio         float64 `json:"dcRatio"`
	DeploymentRatio float64 `json:"deploymentRatio"`
	// APIServerCPUMS is kube-apiserver CPU per floor rollout (a Deployment and a bare pod),
	// in milliseconds; DCAPIServerCPURatio is the DCs' per rollout over it, and
	// DeploymentAPIServerCPURatio the floor's over the Deployments'. All 0 when the CPU by
	// binary was not read.
	APIServerCPUMS              float64 `json:"apiserverCpuMsPerRollout,omitempty"`
	DCAPIServerCPURatio         float64 `json:"dcApiserverCpuRatio,omitempty"`
	DeploymentAPIServerCPURatio float64 `json:"deploymentApiserverCpuRatio,omitempty"`
	// RequestsPerRollout is the floor's apiserver requests per rollout, DCRequestsRatio the
	// DCs' over it (0 when the metrics were not read).
	RequestsPerRollout float64 `json:"requestsPerRollout,omitempty"`
	DCRequestsRatio    float64 `json:"dcRequestsRatio,omitempty"`
}

// manyFloor turns the floor side into ratios; nil when the floor was not measured.
func manyFloor(r *ManyResult) *ManyFloor {
	if r.FirstFloorMS <= 0 {
		return nil
	}
	f := &ManyFloor{MS: r.FirstFloorMS, DCRatio: r.FirstDCMS / r.FirstFloorMS}
	if r.FirstDeploymentMS > 0 {
		f.DeploymentRatio = r.FirstFloorMS / r.FirstDeploymentMS
	}
	if fl, ok := perObjectMS(r.FirstFloorCPUByBinary, "kube-apiserver", r.FirstCount); ok && fl > 0 {
		f.APIServerCPUMS = fl
		if dc, ok := perObjectMS(r.FirstCPUByBinary, "kube-apiserver", r.FirstCount); ok {
			f.DCAPIServerCPURatio = dc / fl
		}
		if d, ok := perObjectMS(r.FirstDeploymentCPUByBinary, "kube-apiserver", r.FirstCount); ok && d > 0 {
			f.DeploymentAPIServerCPURatio = fl / d
		}
	}
	if t := r.FirstFloorThrottle; t != nil && t.TotalPerRollout > 0 {
		f.RequestsPerRollout = t.TotalPerRollout
		if r.FirstDCThrottle != nil {
			f.DCRequestsRatio = r.FirstDCThrottle.TotalPerRollout / t.TotalPerRollout
		}
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

// floorTargets are the first rollouts' targets against the floor.
func (r *ManyResult) floorTargets() []Target {
	t := Target{Goal: fmt.Sprintf("%d first rollouts at once: DC time ≤ %s× the floor's", r.FirstCount, trimFloat(floorTimeTarget)),
		Limit: floorTimeTarget, Unit: "ratio", Status: "not measured"}
	c := Target{Goal: fmt.Sprintf("kube-apiserver CPU per DC first rollout (%d at once) ≤ %s× the floor's", r.FirstCount, trimFloat(floorCPUTarget)),
		Limit: floorCPUTarget, Unit: "ratio", Status: "not measured"}
	f := manyFloor(r)
	if f != nil && r.FirstDCMS > 0 {
		t.Measured, t.Status = f.DCRatio, status(f.DCRatio <= floorTimeTarget)
		t.Note = fmt.Sprintf("DCs %s, floor %s, Deployments %s", ms(r.FirstDCMS), ms(f.MS), ms(r.FirstDeploymentMS))
	}
	if f != nil && f.DCAPIServerCPURatio > 0 {
		c.Measured, c.Status = f.DCAPIServerCPURatio, status(f.DCAPIServerCPURatio <= floorCPUTarget)
		c.Note = fmt.Sprintf("%.1f ms against the floor's %.1f ms", f.DCAPIServerCPURatio*f.APIServerCPUMS, f.APIServerCPUMS)
	}
	return []Target{t, c}
}

// floorMarkdown writes the three sides of the first rollouts per object, as ratios to the
// floor and to the Deployments.
func (r *ManyResult) floorMarkdown(p func(format string, args ...any)) {
	f := manyFloor(r)
	if f == nil {
		p("The floor was not measured in this run (`-many-floor=false`).\n\n")
		return
	}
	cpu := func(m map[string]float64, binary string) (float64, string) {
		if v, ok := perObjectMS(m, binary, r.FirstCount); ok {
			return v, fmt.Sprintf("%.1f ms", v)
		}
		return 0, "not measured"
	}
	ratio := func(x, of float64) string {
		if x <= 0 || of <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", x/of)
	}
	requests := func(t *Throttle) (float64, string) {
		if t == nil {
			return 0, "not measured"
		}
		return t.TotalPerRollout, fmt.Sprintf("%.1f", t.TotalPerRollout)
	}
	fCPU, _ := cpu(r.FirstFloorCPUByBinary, "kube-apiserver")
	dCPU, _ := cpu(r.FirstDeploymentCPUByBinary, "kube-apiserver")
	fReq, _ := requests(r.FirstFloorThrottle)
	p("| %d first rollouts | time to the last one done | ÷ floor | ÷ Deployments | kube-apiserver CPU per rollout | ÷ floor | ÷ Deployments | etcd CPU per rollout | requests per rollout | ÷ floor |\n", r.FirstCount)
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, t float64, cpuBy map[string]float64, th *Throttle) {
		c, cs := cpu(cpuBy, "kube-apiserver")
		_, es := cpu(cpuBy, "etcd")
		q, qs := requests(th)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, ms(t), ratio(t, f.MS), ratio(t, r.FirstDeploymentMS),
			cs, ratio(c, fCPU), ratio(c, dCPU), es, qs, ratio(q, fReq))
	}
	row("DeploymentConfigs", r.FirstDCMS, r.FirstCPUByBinary, r.FirstDCThrottle)
	row("**floor**: Deployments + bare pods, together", f.MS, r.FirstFloorCPUByBinary, r.FirstFloorThrottle)
	row("Deployments", r.FirstDeploymentMS, r.FirstDeploymentCPUByBinary, r.FirstDeploymentThrottle)
	p("\n")
	p("In the floor, the last Deployment was available at %s and the last bare pod Succeeded at %s.\n",
		ms(r.FirstFloorDeploymentsMS), ms(r.FirstFloorPodsMS))
	if r.FirstFloorPodsFailed > 0 {
		p("%d of the bare pods Failed: %v.\n", r.FirstFloorPodsFailed, r.FirstFloorPodFailReasons)
	}
	p("While the floor ran, the machine was busy for %.1f CPU seconds of the %.1f its %d CPUs had; the processes\n",
		r.FirstFloorMachineCPUSeconds, f.MS/1000*float64(r.FirstCPUs), r.FirstCPUs)
	p("alive at the end used: %s (the node agent runs in the bench's process; each pod's shim and test app had\n", cpuList(r.FirstFloorCPUByBinary))
	p("ended by then).\n")
	if t := r.FirstFloorThrottle; t != nil {
		p("The apiserver's most frequent requests per floor rollout: %s.\n", requestsList(t.RequestsPerRollout))
	}
	p("\n")
}
