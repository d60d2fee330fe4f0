package main

// The cluster tax's figures (tax.go measures them): the ratios of the installed phase to
// the two without Stagehand, the target, where the extra CPU went, and the report's
// section and method.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// taxRatios are B/A1, B/A2 and B/mean(A1, A2) of one measure of the phases; ok is false
// unless all three phases measured it.
func (r *TaxResult) taxRatios(f func(TaxPhase) float64) (first, second, mean float64, ok bool) {
	if len(r.Phases) != 3 {
		return 0, 0, 0, false
	}
	a1, b, a2 := f(r.Phases[0]), f(r.Phases[1]), f(r.Phases[2])
	if a1 <= 0 || b <= 0 || a2 <= 0 {
		return 0, 0, 0, false
	}
	return b / a1, b / a2, b / ((a1 + a2) / 2), true
}

func taxCPU(p TaxPhase) float64        { return p.APIServerCPUSeconds }
func taxSettledCPU(p TaxPhase) float64 { return p.SettledAPIServerCPUSeconds }
func taxRequests(p TaxPhase) float64   { return p.Requests }
func taxTime(p TaxPhase) float64       { return p.MS }

// secondsList writes a seconds-by-name map as "name 1.23 s, ...", biggest first.
func secondsList(m map[string]float64) string { return namedList(m, "%s %.2f s") }

// countList writes a count-by-name map as "name 12, ...", biggest first.
func countList(m map[string]float64) string { return namedList(m, "%s %.0f") }

// namedList writes m's entries with format (a name, then its value), biggest first, or
// "none".
func namedList(m map[string]float64, format string) string {
	if len(m) == 0 {
		return "none"
	}
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, ", ")
}

func (r *TaxResult) targets() []Target {
	t := Target{Goal: fmt.Sprintf("cluster tax: apiserver CPU of %d Deployments with Stagehand installed ≤ %s× without", r.Deployments, trimFloat(taxTarget)),
		Limit: taxTarget, Unit: "ratio", Status: "not measured"}
	if r.Skipped != "" {
		t.Note = "skipped: " + r.Skipped
		return []Target{t}
	}
	if b1, b2, b, ok := r.taxRatios(taxCPU); ok {
		t.Measured, t.Status = b, status(b <= taxTarget)
		t.Note = fmt.Sprintf("installed / before %.2f, / after uninstall %.2f", b1, b2)
	}
	return []Target{t}
}

// explain says where the installed phase's extra apiserver CPU went, from what the
// phases measured, and what would close the gap.
func (r *TaxResult) explain() (why, closeIt string) {
	if len(r.Phases) != 3 {
		return "the three phases are not in this run.", "—"
	}
	a1, b, a2 := r.Phases[0], r.Phases[1], r.Phases[2]
	mean := func(f func(TaxPhase) float64) float64 { return (f(a1) + f(a2)) / 2 }
	vap := func(p TaxPhase) float64 { return p.AdmissionSeconds["ValidatingAdmissionPolicy"] }
	mapol := func(p TaxPhase) float64 { return p.AdmissionSeconds["MutatingAdmissionPolicy"] }
	pods := func(p TaxPhase) float64 { return p.WatchEvents["pods"] }
	why = fmt.Sprintf("installed, the apiserver used %.1f s of CPU against %.1f s without, for about as many requests "+
		"(%.0f against %.0f): the controller adds almost no requests. It spent %.2f s in ValidatingAdmissionPolicy against "+
		"%.2f s and %.2f s in MutatingAdmissionPolicy against %.2f s (wall clock, summed over requests), and sent %.0f pod "+
		"watch events against %.0f (the controller's DeferPolicy informer watches every pod that is not a deployer or hook "+
		"pod; a controller without that watch measured the same tax, docs/security.md).", b.APIServerCPUSeconds,
		mean(taxCPU), b.Requests, mean(taxRequests), vap(b), mean(vap), mapol(b), mean(mapol), pods(b), mean(pods))
	closeIt = "narrower matches for the admission policies (a matchCondition or an objectSelector that leaves other " +
		"workloads' writes before any CEL runs) where the policy's security property allows one (docs/security.md " +
		"says why each match is as wide as it is)."
	return why, closeIt
}

func (r *TaxResult) markdown(p func(format string, args ...any)) {
	p("## Cluster tax\n\n")
	if r.Skipped != "" {
		p("Not run: %s.\n", r.Skipped)
		return
	}
	p("%d plain one-replica Deployments, before Stagehand is installed, installed, and after an uninstall (see the\n", r.Deployments)
	p("method). Install (CRDs, `deploy/`, the controller ready): %s; uninstall (every object of `deploy/` gone): %s.\n", ms(r.InstallMS), ms(r.UninstallMS))
	p("Settled: the apiserver's CPU from the first create until it was quiet again after the last Deployment available.\n\n")
	p("| phase | time | apiserver CPU | apiserver CPU, settled | requests | machine CPU | namespace deleted in (apiserver CPU) |\n|---|---|---|---|---|---|---|\n")
	for _, ph := range r.Phases {
		p("| %s | %s | %.1f s | %.1f s | %.0f | %.1f s | %s (%.1f s) |\n", ph.Name, ms(ph.MS), ph.APIServerCPUSeconds, ph.SettledAPIServerCPUSeconds,
			ph.Requests, ph.MachineCPUSeconds, ms(ph.DeleteMS), ph.DeleteAPIServerCPUSeconds)
	}
	p("\n| installed / | before | after uninstall | their mean |\n|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		f    func(TaxPhase) float64
	}{{"apiserver CPU", taxCPU}, {"apiserver CPU, settled", taxSettledCPU}, {"requests", taxRequests}, {"time", taxTime}} {
		if b1, b2, b, ok := r.taxRatios(row.f); ok {
			p("| %s | %.2f | %.2f | **%.2f** |\n", row.name, b1, b2, b)
		}
	}
	p("\nThe apiserver's time (wall clock, summed over requests) in admission plugins and in admission policies (match:\n")
	p("their matchConditions; check: their validations once matched), and the watch events it sent:\n\n")
	for _, ph := range r.Phases {
		p("- %s: plugins %s; policies %s; watch events %s.\n", ph.Name, secondsList(ph.AdmissionSeconds),
			secondsList(ph.PolicySeconds), countList(ph.WatchEvents))
	}
	if r.Note != "" {
		p("\nNote: %s\n", r.Note)
	}
}

// taxMethodMarkdown is the part's method, for the report's Method section.
func taxMethodMarkdown(p func(format string, args ...any)) {
	p("### Cluster tax\n\n")
	p("The tax part measures what having Stagehand installed costs workloads that have nothing to do with it (its\n")
	p("admission policies match every pod and ReplicaSet write, its controller watches them). It runs first, on a local\n")
	p("cluster of its own started without Stagehand, and stops it before the other parts' cluster starts. It runs three\n")
	p("phases there, A/B/A: before Stagehand is installed; installed (the CRDs and `deploy/`, the controller ready); and\n")
	p("after an uninstall (every object of `deploy/` deleted and gone, the CRDs too). Each phase creates the same\n")
	p("one-replica Deployments at once (`-tax-deployments`, %d concurrent creates) in a fresh namespace, and takes the time\n", bulkWorkers)
	p("from the first create to the last one available, the apiserver's CPU over it (utime+stime of its process, from\n")
	p("`/proc`) and its requests (`apiserver_request_total`, everyone's); then it deletes the namespace, waits until it is\n")
	p("gone, and waits until the apiserver is quiet (under %.0f%% of a CPU over %.0f s) before the next phase. The tax is\n", taxQuietCPU*100, taxQuietWindow.Seconds())
	p("installed / mean(before, after uninstall): the two phases without Stagehand bracket the one with it, so that a\n")
	p("cluster that warms up or slows down over the run biases neither side.\n\n")
}
