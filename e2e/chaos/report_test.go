//go:build e2e

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// invariant is one checked rule, with what broke it (empty: it held).
type invariant struct {
	Name       string
	Violations []string
}

// report is what a run writes: its seed and size, every fault as injected, every
// invariant with its count.
type report struct {
	Seed       uint64
	Size       size
	Took       time.Duration
	Faults     []injected
	Invariants []invariant
	Deployers  int
	HookPods   int
	Outcomes   map[string]int
	Failures   []string
	Memory     string
}

func (r *report) failed() []string {
	var out []string
	for _, inv := range r.Invariants {
		if len(inv.Violations) > 0 {
			out = append(out, fmt.Sprintf("%s: %d (%s)", inv.Name, len(inv.Violations), strings.Join(inv.Violations, "; ")))
		}
	}
	for _, f := range r.Faults {
		if strings.HasPrefix(f.Result, "ERROR") {
			out = append(out, fmt.Sprintf("fault %s at %s could not be injected: %s", f.Kind, f.Began, f.Result))
		}
	}
	return out
}

func (r *report) text() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Chaos run: seed %d, size %s\n\n", r.Seed, r.Size.Name)
	fmt.Fprintf(&b, "Replay: STAGEHAND_CHAOS=%s STAGEHAND_SEED=%d make chaos\n\n", r.Size.Name, r.Seed)
	fmt.Fprintf(&b, "%d DCs, %d rollouts over %s; the run took %s.\n", r.Size.DCs, r.Size.Rollouts, r.Size.Window, r.Took.Round(time.Second))
	fmt.Fprintf(&b, "%d deployer pods and %d hook pods recorded.\n\n", r.Deployers, r.HookPods)
	counts := map[faultKind]int{}
	for _, f := range r.Faults {
		counts[f.Kind]++
	}
	b.WriteString("## Faults injected\n\n")
	for _, k := range []faultKind{leaderKill, nodeStop, nodeLost, apiserverRestart, etcdRestart} {
		fmt.Fprintf(&b, "- %s: %d\n", k, counts[k])
	}
	b.WriteString("\n| at | fault | target | result |\n|---|---|---|---|\n")
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Began, f.Kind, f.Target, f.Result)
	}
	b.WriteString("\n## Invariants\n\n| invariant | violations |\n|---|---|\n")
	for _, inv := range r.Invariants {
		fmt.Fprintf(&b, "| %s | %d |\n", inv.Name, len(inv.Violations))
	}
	for _, inv := range r.Invariants {
		for _, v := range inv.Violations {
			fmt.Fprintf(&b, "\n- %s: %s", inv.Name, v)
		}
	}
	fmt.Fprintf(&b, "\nController memory: %s\n\n## Revisions by outcome\n\n", r.Memory)
	keys := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %d\n", k, r.Outcomes[k])
	}
	if len(r.Failures) > 0 {
		b.WriteString("\n## Failed revisions\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

// write writes the report to $STAGEHAND_CHAOS_REPORT, or to bin/chaos/ in the repository,
// and returns the path.
func (r *report) write(repoRoot string) (string, error) {
	path := os.Getenv("STAGEHAND_CHAOS_REPORT")
	if path == "" {
		path = filepath.Join(repoRoot, "bin", "chaos", fmt.Sprintf("report-%s-%d.md", r.Size.Name, r.Seed))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(r.text()), 0o644)
}
