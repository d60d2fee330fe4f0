package deployerpod

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// withMetrics gives the fixture's controller real metrics, registered with the returned
// registry.
func (f *fixture) withMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	f.pods.metrics = plumbing.NewMetrics(reg)
	return reg
}

// The hooks in a finished deployer pod's termination message are counted once, with the
// revision's terminal transition, their stage bounded (step-N is step, a custom stage is
// other); syncing the terminal revision again counts nothing.
func TestHookOutcomesAreCountedOnceFromTheTerminationMessage(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 0)
	pod := terminated(deployerPod(t, rs, corev1.PodFailed), 3, v1alpha1.TerminationMessage{
		Reason: v1alpha1.ReasonHookFailed, Message: "the step-2 hook failed",
		Hooks: []v1alpha1.HookOutcome{
			{Stage: "pre", Result: v1alpha1.HookResultSucceeded, Seconds: 4},
			{Stage: "step-1", Result: v1alpha1.HookResultIgnored, Seconds: 2},
			{Stage: "step-2", Result: v1alpha1.HookResultFailed, Seconds: 40},
			{Stage: "smoke-web", Result: "Exploded", Seconds: 1},
		},
	}.Encode())
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)
	reg := f.withMetrics()

	require.NoError(t, f.syncRevision("web-1"))
	require.Equal(t, "Failed", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
	want := `
# HELP stagehand_hooks_total Lifecycle hooks that finished, by stage (pre, mid, post, step, failed, other) and result (Succeeded, Failed, Ignored, TimedOut, Unknown).
# TYPE stagehand_hooks_total counter
stagehand_hooks_total{result="Failed",stage="step"} 1
stagehand_hooks_total{result="Ignored",stage="step"} 1
stagehand_hooks_total{result="Succeeded",stage="pre"} 1
stagehand_hooks_total{result="Unknown",stage="other"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "stagehand_hooks_total"))

	f.Cache(f.GetRS("web-1")) // the cache catches up with the write
	require.NoError(t, f.syncRevision("web-1"))
	require.NoError(t, f.syncRevision("web-1"))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "stagehand_hooks_total"), "not counted again")
	n, err := testutil.GatherAndCount(reg, "stagehand_hook_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, 4, n, "one duration series per stage and result")
}

// The failure hook is counted once, at stage failed, when the controller records its end.
func TestFailureHookOutcomeIsCountedOnce(t *testing.T) {
	dc, rs := failedWithHook(t, v1alpha1.ReasonHookFailed)
	rs.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, runner(t, rs, corev1.PodSucceeded, time.Now().Add(-30*time.Second)))
	reg := f.withMetrics()

	require.NoError(t, f.syncRevision("web-2"))
	f.Cache(f.GetRS("web-2"))
	require.NoError(t, f.syncRevision("web-2"))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP stagehand_hooks_total Lifecycle hooks that finished, by stage (pre, mid, post, step, failed, other) and result (Succeeded, Failed, Ignored, TimedOut, Unknown).
# TYPE stagehand_hooks_total counter
stagehand_hooks_total{result="Succeeded",stage="failed"} 1
`), "stagehand_hooks_total"))
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, fam := range families {
		if fam.GetName() == "stagehand_hook_duration_seconds" {
			require.Len(t, fam.GetMetric(), 1)
			h := fam.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(1), h.GetSampleCount())
			require.InDelta(t, 30, h.GetSampleSum(), 5, "from the runner pod's creation")
			return
		}
	}
	t.Fatal("no stagehand_hook_duration_seconds")
}
