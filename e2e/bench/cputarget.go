package main

import "fmt"

// apiserverCPURatioTarget is issue 23's bound on the apiserver's cost of a first rollout:
// kube-apiserver CPU-seconds per DeploymentConfig first rollout at most 1.5 times the
// Deployment's, in the same run.
const apiserverCPURatioTarget = 1.5

// apiserverCPUTarget checks the kube-apiserver CPU per first rollout, DCs against
// Deployments, from the CPU the apiserver process used while each side rolled out.
func (r *ManyResult) apiserverCPUTarget() Target {
	t := Target{Goal: fmt.Sprintf("kube-apiserver CPU per first rollout (%d at once), DC/Deployment ≤ %s", r.FirstCount, trimFloat(apiserverCPURatioTarget)),
		Limit: apiserverCPURatioTarget, Unit: "ratio", Status: "not measured"}
	dc, okDC := r.FirstCPUByBinary["kube-apiserver"]
	dep, okDep := r.FirstDeploymentCPUByBinary["kube-apiserver"]
	if !okDC || !okDep || dep <= 0 || r.FirstCount == 0 {
		return t
	}
	t.Measured = dc / dep
	t.Status = status(t.Measured <= apiserverCPURatioTarget)
	t.Note = fmt.Sprintf("%.1f ms against %.1f ms", dc/float64(r.FirstCount)*1000, dep/float64(r.FirstCount)*1000)
	return t
}
