// Command stagehand-bench compares Stagehand's DeploymentConfig rollouts with the native
// Deployment controller on the same cluster, in the same run, and writes the results as
// JSON, a Markdown report and an SVG chart.
//
//	go run ./bench -quick              # from e2e/: 10 replicas, Rolling, 3 rounds -> bin/bench/
//	go run ./bench                     # the full run -> docs/performance.*
//
// It starts the local cluster and installs Stagehand as the e2e suite does
// (framework.Start; E2E_KUBECONFIG points it at a cluster of your own instead). It is a
// main package, not a test: `make test` never runs it. See `make bench` and `make bench-quick`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
)

type options struct {
	quick      bool
	out        string
	sizes      []int32
	minReady   []int32
	recreate   bool
	rounds     int
	bigRounds  int
	roundLimit time.Duration
	// nodes is how many Nodes the local cluster registers (1,000 pods each).
	nodes int
	// seed drives every random choice of the run (logged and kept in the results).
	seed int64
	// only lists the parts to run (empty: all); see parts.
	only map[string]bool
	// manyRolling is how many DCs roll at once in the many part (0: that half is skipped).
	manyRolling int
	// apf runs the local cluster's apiserver with API Priority and Fairness, as real
	// clusters run it.
	apf bool
	// manyFloor runs the many part's bare run-once pods after its Deployments.
	manyFloor bool
	// taxDeployments is how many Deployments each phase of the tax part creates.
	taxDeployments int
	// scaleDCs is how many DeploymentConfigs the scale part creates (measured at half and all).
	scaleDCs int
}

// parts are the measurements of a run, in their order; -only picks some. The tax part
// runs first, on a cluster of its own that it stops before the others' cluster starts.
var parts = []string{"tax", "cases", "overhead", "hooks", "binaries", "apicost", "reaction", "many", "scale"}

// rng returns a random source of the run's seed: each case gets its own, so a case's
// choices do not depend on which cases ran before it.
func (o options) rng() *rand.Rand { return rand.New(rand.NewSource(o.seed)) }

// want reports whether this run takes part.
func (o options) want(part string) bool { return len(o.only) == 0 || o.only[part] }

// wantAfter reports whether this run takes a part that comes after part in parts.
func (o options) wantAfter(part string) bool {
	i := slices.Index(parts, part)
	return i >= 0 && slices.ContainsFunc(parts[i+1:], o.want)
}

func main() {
	var o options
	var sizes, minReady string
	flag.BoolVar(&o.quick, "quick", false, "quick run: 10 replicas, minReadySeconds 0 and 2, Rolling only, 3 rounds; writes to bin/bench/")
	flag.StringVar(&o.out, "out", "", "folder for performance.json, performance.md and performance-rollout.svg (default: docs/ for the full run, bin/bench/ for -quick)")
	flag.StringVar(&sizes, "sizes", "", "comma-separated replica counts (default 10,100,1000; quick: 10)")
	flag.StringVar(&minReady, "min-ready", "0,2", "comma-separated minReadySeconds values")
	flag.BoolVar(&o.recreate, "recreate", true, "also run Recreate vs Deployment Recreate (not in -quick; sizes below 1000)")
	flag.IntVar(&o.rounds, "rounds", 0, "rounds per case (default 5; quick: 3)")
	flag.IntVar(&o.bigRounds, "big-rounds", 2, "rounds for cases of 1000 replicas or more")
	flag.DurationVar(&o.roundLimit, "round-timeout", 0, "time limit of one round (default 3m, 15m from 1000 replicas)")
	flag.IntVar(&o.nodes, "nodes", 0, "Nodes of the local cluster, 1,000 pods each (default 4; quick: 1)")
	flag.Int64Var(&o.seed, "seed", 0, "seed of the rounds' random start within the second (default: from the clock; the run logs it)")
	flag.IntVar(&o.manyRolling, "many-rolling", manyRolling, "DeploymentConfigs rolling at once in the many part (0 skips that half)")
	flag.BoolVar(&o.apf, "apf", true, "run the local cluster's apiserver with API Priority and Fairness, as real clusters do (-apf=false: without)")
	flag.BoolVar(&o.manyFloor, "many-floor", true, "in the many part, also time the floor of a DC rollout: as many Deployments and bare run-once pods of the deployer pod's shape, created together")
	flag.IntVar(&o.taxDeployments, "tax-deployments", taxDeployments, "one-replica Deployments of each phase of the tax part (before install, installed, after uninstall)")
	flag.IntVar(&o.scaleDCs, "scale-dcs", scaleDCs, "DeploymentConfigs (0 replicas) of the scale part on one controller, measured at half of them and at all")
	only := flag.String("only", "", "comma-separated parts to run (default all; quick: cases,overhead,binaries): "+strings.Join(parts, ","))
	render := flag.String("render", "", "write performance.md and performance-rollout.svg again from this performance.json (into -out, default its folder) without running anything")
	flag.Parse()

	if *render != "" {
		if err := rerender(*render, o.out); err != nil {
			fail(err)
		}
		return
	}

	if *only != "" {
		o.only = map[string]bool{}
		for _, p := range strings.Split(*only, ",") {
			if !slices.Contains(parts, p) {
				fail(fmt.Errorf("-only: no part %q; the parts are %s", p, strings.Join(parts, ",")))
			}
			o.only[p] = true
		}
	}
	if o.quick {
		if o.only == nil {
			o.only = map[string]bool{"cases": true, "overhead": true, "binaries": true}
		}
		o.recreate = false
		if sizes == "" {
			sizes = "10"
		}
		if o.rounds == 0 {
			o.rounds = 3
		}
	}
	if sizes == "" {
		sizes = "10,100,1000"
	}
	if o.rounds == 0 {
		o.rounds = 5
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	if o.nodes == 0 {
		o.nodes = 4
		if o.quick {
			o.nodes = 1
		}
	}
	var err error
	if o.sizes, err = parseInts(sizes); err != nil {
		fail(err)
	}
	if o.minReady, err = parseInts(minReady); err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "stagehand-bench:", err)
	os.Exit(1)
}

func parseInts(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("not a count: %q", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// cases lists the cases of a run: Rolling vs RollingUpdate for every size and
// minReadySeconds, then Recreate vs Recreate for the sizes below 1000.
func (o options) cases() []benchCase {
	var cs []benchCase
	add := func(strategy stagehandv1.DeploymentStrategyType) {
		for _, n := range o.sizes {
			if strategy == stagehandv1.DeploymentStrategyTypeRecreate && n >= 1000 {
				continue
			}
			for _, mr := range o.minReady {
				rounds := o.rounds
				if n >= 1000 && o.bigRounds < rounds {
					rounds = o.bigRounds
				}
				limit := o.roundLimit
				if limit == 0 {
					limit = 3 * time.Minute
					if n >= 1000 {
						limit = 15 * time.Minute
					}
				}
				cs = append(cs, benchCase{Strategy: strategy, Replicas: n, MinReadySeconds: mr, Rounds: rounds, limit: limit, rng: o.rng()})
			}
		}
	}
	add(stagehandv1.DeploymentStrategyTypeRolling)
	if o.recreate {
		add(stagehandv1.DeploymentStrategyTypeRecreate)
	}
	return cs
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	logf("seed %d (-seed %d repeats this run's random choices)", o.seed, o.seed)
	res := &Results{
		Date:  time.Now().UTC().Format(time.RFC3339),
		Quick: o.quick,
		Seed:  o.seed,
	}
	if o.out == "" {
		root, err := localcluster.FindRepoRoot()
		if err != nil {
			return err
		}
		o.out = filepath.Join(root, "docs")
		if o.quick {
			o.out = filepath.Join(root, "bin", "bench")
		}
	}
	finish := func() error {
		res.Targets = targets(res)
		res.DurationSeconds = time.Since(began).Seconds()
		if err := write(o.out, res); err != nil {
			return err
		}
		printSummary(os.Stdout, res, o.out)
		return nil
	}
	if o.want("tax") {
		logf("tax: Deployments before Stagehand is installed, installed, after an uninstall, on a cluster of its own")
		var err error
		if res.Tax, err = measureTax(ctx, o, res); err != nil {
			return fmt.Errorf("tax: %w", err)
		}
	}
	if !slices.ContainsFunc(parts, func(p string) bool { return p != "tax" && o.want(p) }) {
		return finish()
	}
	logf("starting the cluster and installing Stagehand")
	env, err := framework.StartWith(ctx, framework.StartOptions{
		Nodes: o.nodes, AuditLog: o.want("apicost"), PriorityAndFairness: o.apf,
	})
	if err != nil {
		return err
	}
	defer env.Stop()
	if err := waitForController(ctx, env); err != nil {
		return err
	}
	logf("cluster ready after %s", time.Since(began).Round(time.Second))
	res.Machine = machine(env)
	res.Machine.PriorityAndFairness = flowControlOn(ctx, env)
	capacity, err := podCapacity(ctx, env)
	if err != nil {
		return err
	}
	for _, c := range o.cases() {
		if !o.want("cases") {
			break
		}
		// Both workloads, their surge and the pods still terminating must fit on the nodes.
		if need := 2*(c.Replicas+(c.Replicas+3)/4) + 20; capacity > 0 && int64(need) > capacity {
			reason := fmt.Sprintf("needs about %d pods side by side, the cluster's nodes allow %d (run it on a bigger cluster with %s)", need, capacity, framework.KubeconfigEnv)
			logf("case %s: skipped: %s", c.name(), reason)
			res.Cases = append(res.Cases, CaseResult{Name: c.name(), Strategy: string(c.Strategy), Replicas: c.Replicas, MinReadySeconds: c.MinReadySeconds, Skipped: reason})
			continue
		}
		logf("case %s: %d rounds", c.name(), c.Rounds)
		cr, err := runCase(ctx, env, c)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.name(), err)
		}
		logf("case %s: Deployment median %s, DeploymentConfig median %s, ratio median %.2f",
			c.name(), ms(cr.DeploymentMedianMS), ms(cr.DCMedianMS), cr.RatioMedian)
		res.Cases = append(res.Cases, cr)
	}
	if o.want("overhead") {
		// The fixed overhead of a revision, on a DeploymentConfig alone (one replica,
		// Rolling), so that no Deployment rolling beside it loads the machine.
		oc := benchCase{Strategy: stagehandv1.DeploymentStrategyTypeRolling, Replicas: 1, Rounds: o.rounds, limit: 3 * time.Minute, alone: true, rng: o.rng()}
		logf("case %s: %d rounds", oc.name(), oc.Rounds)
		alone, err := runCase(ctx, env, oc)
		if err != nil {
			return fmt.Errorf("case %s: %w", oc.name(), err)
		}
		res.FixedOverhead = &alone
	}
	res.Overhead = overheadSummary(res.Cases)
	if err := runExtras(ctx, env, o, res); err != nil {
		return err
	}
	return finish()
}

// runExtras takes the measurements beyond the rollout cases that this run wants.
func runExtras(ctx context.Context, env *framework.Env, o options, res *Results) error {
	var err error
	if o.want("hooks") {
		logf("hooks: Recreate with three no-op hook pods vs without")
		if res.Hooks, err = measureHooks(ctx, env, o); err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
	}
	if o.want("binaries") {
		logf("binaries: sizes and the deployer's start to its first API call")
		if res.Binaries, err = measureBinaries(ctx, env, o); err != nil {
			return fmt.Errorf("binaries: %w", err)
		}
	}
	if o.want("apicost") {
		logf("apicost: apiserver requests of one rollout, DeploymentConfig vs Deployment")
		if res.APICost, err = measureAPICost(ctx, env, o); err != nil {
			return fmt.Errorf("apicost: %w", err)
		}
	}
	if o.want("reaction") {
		logf("reaction: spec change → deployer pod created, among many DeploymentConfigs")
		if res.Reaction, err = measureReaction(ctx, env, o); err != nil {
			return fmt.Errorf("reaction: %w", err)
		}
	}
	if o.want("many") {
		logf("many: first rollouts at once, DeploymentConfigs vs Deployments")
		if res.Many, err = measureMany(ctx, env, o); err != nil {
			return fmt.Errorf("many: %w", err)
		}
	}
	if o.want("scale") {
		logf("scale: %d DeploymentConfigs on one controller: at rest, reaction, restart", o.scaleDCs)
		if res.Scale, err = measureScale(ctx, env, o); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// rerender rewrites the report and the chart from a results file (after a change of the
// report's layout, say), leaving the measurements as they are.
func rerender(path, out string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if out == "" {
		out = filepath.Dir(path)
	}
	res.Targets = targets(&res) // the targets as this version of the bench checks them
	return write(out, &res)
}
