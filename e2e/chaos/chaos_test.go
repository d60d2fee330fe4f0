//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// terminalGrace is how long after its timeout a revision may still end (the issue's
// "terminal within its timeout plus 2 minutes").
const terminalGrace = 2 * time.Minute

// TestChaos runs the rollouts of one size while it injects the planned faults, then
// checks the invariants and writes the report. STAGEHAND_CHAOS=full is make chaos;
// STAGEHAND_SEED replays a seed.
func TestChaos(t *testing.T) {
	requireLocalCluster(t)
	sz, seed, err := chosenSize()
	require.NoError(t, err)
	t.Logf("chaos size %s, random seed %d (replay: STAGEHAND_CHAOS=%s STAGEHAND_SEED=%d)", sz.Name, seed, sz.Name, seed)
	ctx := context.Background()
	began := time.Now()

	// Given the DCs, all rolled out once, and the leader's memory then
	ns := framework.CreateNamespace(t, env.Kube)
	rec, err := newRecorder(ctx, ns)
	require.NoError(t, err)
	defer rec.close()
	execDir := t.TempDir()
	createWorkload(t, ctx, ns, sz, execDir)
	require.Empty(t, settled(ctx, ns, sz, 5*time.Minute), "the first rollouts, before any fault")
	baseline, basePod, err := leaderRSS(ctx)
	require.NoError(t, err)

	// When rollouts and faults run together
	sched := plan(sz, seed)
	in := &injector{t: t, sz: sz, start: time.Now()}
	var wg sync.WaitGroup
	wg.Go(func() { runRollouts(t, ctx, ns, sz, in.start, sched.Rollouts) })
	byKind := map[faultKind][]fault{}
	for _, f := range sched.Faults {
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
	for _, faults := range byKind {
		wg.Go(func() {
			for _, f := range faults {
				time.Sleep(time.Until(in.start.Add(f.At)))
				in.run(ctx, f)
			}
		})
	}
	wg.Wait()

	// Then every revision ends, and the invariants hold
	open := settled(ctx, ns, sz, sz.Settle)
	stuck, err := env.StuckTerminating(ctx, 2*time.Minute)
	require.NoError(t, err)
	end, endPod, err := leaderRSS(ctx)
	require.NoError(t, err)
	deployers, hooks := rec.counts()
	r := &report{Seed: seed, Size: sz, Took: time.Since(began), Faults: in.log, Deployers: deployers, HookPods: hooks,
		Outcomes: rec.outcomes(), Failures: rec.failed(),
		Memory: fmt.Sprintf("leader %s %d KiB after the first rollouts, leader %s %d KiB at the end (%.0f%%)",
			basePod, baseline, endPod, end, 100*float64(end)/float64(baseline))}
	var memory []string
	if ratio := float64(end) / float64(baseline); ratio > 1+sz.MemoryTolerance || ratio < 1-sz.MemoryTolerance {
		memory = append(memory, r.Memory)
	}
	r.Invariants = []invariant{
		{Name: "revision not terminal within its timeout + 2 min", Violations: append(rec.overdue(timeoutOf(sz), terminalGrace), open...)},
		{Name: "two deployer or hook pods under one name", Violations: rec.duplicates()},
		{Name: "exec hook run more often than its recorded attempts", Violations: execRunsOverAttempts(ctx, ns, execDir)},
		{Name: "pod left Terminating", Violations: stuck},
		{Name: "revision Complete with fewer available pods than desired", Violations: underAvailable(ctx, ns, sz)},
		{Name: "controller memory off its baseline by more than 20%", Violations: memory},
	}
	path, err := r.write(env.RepoRoot)
	require.NoError(t, err)
	t.Logf("report: %s\n%s", path, r.text())
	require.Empty(t, r.failed(), "seed %d: see the report %s", seed, path)
}

// runRollouts changes the DCs' templates at the planned times, round robin.
func runRollouts(t *testing.T, ctx context.Context, ns string, sz size, start time.Time, at []time.Duration) {
	for k, offset := range at {
		time.Sleep(time.Until(start.Add(offset)))
		dc := dcName(k % sz.DCs)
		if err := rollout(ctx, ns, dc, 2+k/sz.DCs); err != nil {
			t.Errorf("rollout %d of %s: %v", k, dc, err)
		}
	}
}
