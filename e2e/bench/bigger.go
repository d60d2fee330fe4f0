package main

// biggerMachineCPUs is what counts as the bigger machine of issue 23: 16 cores.
const biggerMachineCPUs = 16

// biggerMachineMarkdown writes "## On a bigger machine": this run's many-at-once figures
// when it ran on 16 CPUs or more; otherwise it says that no such machine was at hand and
// quotes the last 16-CPU figures, which issue 23 recorded at ae3ffca, as what they are.
func biggerMachineMarkdown(p func(format string, args ...any), res *Results) {
	p("\n## On a bigger machine\n\n")
	m := res.Many
	if res.Machine.NProc >= biggerMachineCPUs && m != nil && m.FirstDCMS > 0 {
		p("This run had %d CPUs: the many-at-once figures above are the bigger machine's. 300 first rollouts at once took\n", res.Machine.NProc)
		p("%s for the DeploymentConfigs and %s for the Deployments (%.2f×).\n", ms(m.FirstDCMS), ms(m.FirstDeploymentMS), m.FirstRatio)
		return
	}
	p("This run had %d CPUs; no machine of %d or more was at hand for it, so this section holds no figures of its own.\n", res.Machine.NProc, biggerMachineCPUs)
	p("The last ones are issue 23's, measured at `ae3ffca` (before that issue's changes) with `stagehand-bench -only many\n")
	p("-many-rolling 0` on 16 CPUs: 300 DeploymentConfigs took 23.4 s against 5.31 s for 300 Deployments (4.40×) while the\n")
	p("machine sat 78%% idle; the same run with the controller's client-side limit raised (`--kube-api-qps=5000\n")
	p("--kube-api-burst=10000`) took 7.55 s against 5.32 s (1.42×). Since issue 23 the controller sets no client-side\n")
	p("limit where the apiserver runs Priority and Fairness, as that experiment did by hand (docs/controller.md). To\n")
	p("measure on a bigger machine, run the same command there; `make bench` fills this section from its own figures\n")
	p("when it runs on %d CPUs or more.\n", biggerMachineCPUs)
}
