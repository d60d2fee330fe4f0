package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Results is everything one run measured; it is written as performance.json.
type Results struct {
	Date  string `json:"date"`
	Quick bool   `json:"quick"`
	// Seed drove the run's random choices (bench -seed repeats them).
	Seed            int64        `json:"seed"`
	DurationSeconds float64      `json:"durationSeconds"`
	Machine         Machine      `json:"machine"`
	Cases           []CaseResult `json:"cases"`
	// FixedOverhead is the dedicated overhead case: a DeploymentConfig of one replica alone.
	FixedOverhead *CaseResult `json:"fixedOverhead,omitempty"`
	// Overhead is the same steps over the side-by-side rounds of each strategy.
	Overhead []OverheadStat `json:"overhead"`
	// The measurements beyond the rollout cases, each from its own file; nil when this
	// run did not take it (see -only).
	Hooks    *HooksResult    `json:"hooks,omitempty"`    // hooks.go
	Binaries *BinariesResult `json:"binaries,omitempty"` // binaries.go
	APICost  *APICostResult  `json:"apiCost,omitempty"`  // apicost.go
	Reaction *ReactionResult `json:"reaction,omitempty"` // reaction.go
	Many     *ManyResult     `json:"many,omitempty"`     // many.go
	Scale    *ScaleResult    `json:"scale,omitempty"`    // scale.go
	Tax      *TaxResult      `json:"tax,omitempty"`      // tax.go
	Targets  []Target        `json:"targets"`
}

// extra is what each measurement beyond the rollout cases gives the report.
type extra interface {
	// targets are the goals this measurement checks.
	targets() []Target
	// markdown writes its section of performance.md, from its own "## " heading.
	markdown(p func(format string, args ...any))
}

// extras are the measurements this run took, in the report's order.
func (res *Results) extras() []extra {
	var xs []extra
	if res.Hooks != nil {
		xs = append(xs, res.Hooks)
	}
	if res.Binaries != nil {
		xs = append(xs, res.Binaries)
	}
	if res.APICost != nil {
		xs = append(xs, res.APICost)
	}
	if res.Reaction != nil {
		xs = append(xs, res.Reaction)
	}
	if res.Many != nil {
		xs = append(xs, res.Many)
	}
	if res.Scale != nil {
		xs = append(xs, res.Scale)
	}
	if res.Tax != nil {
		xs = append(xs, res.Tax)
	}
	return xs
}

// Machine describes where the run ran.
type Machine struct {
	NProc        int    `json:"nproc"`
	CPU          string `json:"cpu,omitempty"`
	GoVersion    string `json:"goVersion"`
	KubeVersion  string `json:"kubeVersion"`
	OS           string `json:"os"`
	Arch         string `json:"arch"`
	LocalCluster bool   `json:"localCluster"`
	// PriorityAndFairness is whether the apiserver ran with API Priority and Fairness.
	PriorityAndFairness bool `json:"priorityAndFairness"`
}

// CaseResult is one case: its rounds and their medians.
type CaseResult struct {
	Name            string `json:"name"`
	Strategy        string `json:"strategy"`
	Replicas        int32  `json:"replicas"`
	MinReadySeconds int32  `json:"minReadySeconds"`
	Namespace       string `json:"namespace,omitempty"`
	// Skipped says why the case did not run (no rounds then).
	Skipped            string  `json:"skipped,omitempty"`
	Rounds             []Round `json:"rounds"`
	DeploymentMedianMS float64 `json:"deploymentMedianMs"`
	DCMedianMS         float64 `json:"dcMedianMs"`
	RatioMedian        float64 `json:"ratioMedian"`
	RSCreatedMedianMS  float64 `json:"rsCreatedMedianMs"`
	DeployerPodMedian  float64 `json:"deployerPodMedianMs"`
	FirstScaleMedianMS float64 `json:"firstScaleMedianMs"`
}

// Round is one template change of both workloads. Every time is in milliseconds from the
// change (both updates sent at once) to the watch event that showed the step.
type Round struct {
	Round    int   `json:"round"`
	Revision int64 `json:"revision"`
	// DeploymentMS: the Deployment complete (observedGeneration ≥ generation, updated ==
	// available == replicas == status.replicas).
	DeploymentMS float64 `json:"deploymentMs"`
	// DCMS: revision Complete, the earlier of DCPhaseAnnotationMS and DCStatusMS.
	DCMS                float64 `json:"dcMs"`
	DCPhaseAnnotationMS float64 `json:"dcPhaseAnnotationMs"`
	DCStatusMS          float64 `json:"dcStatusMs"`
	// Ratio is DCMS / DeploymentMS.
	Ratio float64 `json:"ratio"`
	// The fixed overhead of the revision: ReplicaSet <name>-N created, its deployer pod
	// created, its first scale (spec.replicas > 0).
	RSCreatedMS   float64 `json:"rsCreatedMs"`
	DeployerPodMS float64 `json:"deployerPodMs"`
	FirstScaleMS  float64 `json:"firstScaleMs"`
	// The rest of the revision's timeline: its deployer pod bound to a node and Running
	// (as the node agent reports it), the old revision scaled to 0, the deployer pod
	// Succeeded or Failed.
	DeployerBoundMS   float64 `json:"deployerBoundMs"`
	DeployerRunningMS float64 `json:"deployerRunningMs"`
	OldAtZeroMS       float64 `json:"oldAtZeroMs"`
	DeployerEndedMS   float64 `json:"deployerEndedMs"`
}

// OverheadStat is the median fixed overhead over the rounds of one strategy.
type OverheadStat struct {
	Strategy      string  `json:"strategy"`
	Rounds        int     `json:"rounds"`
	RSCreatedMS   float64 `json:"rsCreatedMedianMs"`
	DeployerPodMS float64 `json:"deployerPodMedianMs"`
	FirstScaleMS  float64 `json:"firstScaleMedianMs"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianRound is the median of every step over rounds (each step apart).
func medianRound(rs []Round) Round {
	m := func(f func(Round) float64) float64 { return median(pick(rs, f)) }
	return Round{
		RSCreatedMS:       m(func(r Round) float64 { return r.RSCreatedMS }),
		DeployerPodMS:     m(func(r Round) float64 { return r.DeployerPodMS }),
		DeployerBoundMS:   m(func(r Round) float64 { return r.DeployerBoundMS }),
		DeployerRunningMS: m(func(r Round) float64 { return r.DeployerRunningMS }),
		FirstScaleMS:      m(func(r Round) float64 { return r.FirstScaleMS }),
		OldAtZeroMS:       m(func(r Round) float64 { return r.OldAtZeroMS }),
		DeployerEndedMS:   m(func(r Round) float64 { return r.DeployerEndedMS }),
		DCMS:              m(func(r Round) float64 { return r.DCMS }),
	}
}

func pick(rs []Round, f func(Round) float64) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, f(r))
	}
	return out
}

func summarize(c *CaseResult) {
	c.DeploymentMedianMS = median(pick(c.Rounds, func(r Round) float64 { return r.DeploymentMS }))
	c.DCMedianMS = median(pick(c.Rounds, func(r Round) float64 { return r.DCMS }))
	c.RatioMedian = median(pick(c.Rounds, func(r Round) float64 { return r.Ratio }))
	c.RSCreatedMedianMS = median(pick(c.Rounds, func(r Round) float64 { return r.RSCreatedMS }))
	c.DeployerPodMedian = median(pick(c.Rounds, func(r Round) float64 { return r.DeployerPodMS }))
	c.FirstScaleMedianMS = median(pick(c.Rounds, func(r Round) float64 { return r.FirstScaleMS }))
}

func overheadSummary(cases []CaseResult) []OverheadStat {
	var out []OverheadStat
	for _, strategy := range []string{"Rolling", "Recreate"} {
		var rounds []Round
		for _, c := range cases {
			if c.Strategy == strategy {
				rounds = append(rounds, c.Rounds...)
			}
		}
		if len(rounds) == 0 {
			continue
		}
		out = append(out, OverheadStat{
			Strategy:      strategy,
			Rounds:        len(rounds),
			RSCreatedMS:   median(pick(rounds, func(r Round) float64 { return r.RSCreatedMS })),
			DeployerPodMS: median(pick(rounds, func(r Round) float64 { return r.DeployerPodMS })),
			FirstScaleMS:  median(pick(rounds, func(r Round) float64 { return r.FirstScaleMS })),
		})
	}
	return out
}

func ms(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1f s", v/1000)
	}
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func write(dir string, res *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "performance.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "performance-rollout.svg"), []byte(chart(res)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "performance.md"), []byte(markdown(res)), 0o644)
}

func printSummary(w io.Writer, res *Results, dir string) {
	fmt.Fprintf(w, "\n%-42s %12s %12s %8s\n", "case", "Deployment", "DC", "ratio")
	for _, c := range res.Cases {
		if c.Skipped != "" {
			fmt.Fprintf(w, "%-42s skipped: %s\n", c.Name, c.Skipped)
			continue
		}
		fmt.Fprintf(w, "%-42s %12s %12s %8.2f\n", c.Name, ms(c.DeploymentMedianMS), ms(c.DCMedianMS), c.RatioMedian)
	}
	fmt.Fprintf(w, "\nfixed overhead (median from the template change):\n")
	if f := res.FixedOverhead; f != nil {
		fmt.Fprintf(w, "  alone     ReplicaSet created %s, deployer pod created %s, first scale %s, Complete %s (%d rounds, 1 replica, no Deployment beside it)\n",
			ms(f.RSCreatedMedianMS), ms(f.DeployerPodMedian), ms(f.FirstScaleMedianMS), ms(f.DCMedianMS), len(f.Rounds))
	}
	for _, o := range res.Overhead {
		fmt.Fprintf(w, "  %-9s ReplicaSet created %s, deployer pod created %s, first scale %s (%d rounds)\n",
			o.Strategy, ms(o.RSCreatedMS), ms(o.DeployerPodMS), ms(o.FirstScaleMS), o.Rounds)
	}
	fmt.Fprintf(w, "\ntargets:\n")
	for _, t := range res.Targets {
		if t.Status == "not measured" {
			fmt.Fprintf(w, "  %-13s %s\n", t.Status, t.Goal)
		} else {
			fmt.Fprintf(w, "  %-13s %s (measured %s)\n", t.Status, t.Goal, t.format())
		}
	}
	fmt.Fprintf(w, "\nwrote %s/performance.{json,md} and performance-rollout.svg in %.0f s\n", dir, res.DurationSeconds)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
