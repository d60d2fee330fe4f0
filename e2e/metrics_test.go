//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
	"github.com/stagehand-dev/stagehand/internal/dashboard"
)

// documentedSeries are the series docs/controller.md promises an operator after a
// rollout with a hook pod, an exec hook and a DeferPolicy run, each with one label set
// that must be there (an empty map: any).
var documentedSeries = map[string]map[string]string{
	"stagehand_leader":                                         {},
	"stagehand_rollouts":                                       {"phase": "Running"},
	"stagehand_rollouts_started_total":                         {"strategy": "Recreate"},
	"stagehand_rollouts_completed_total":                       {"strategy": "Recreate"},
	"stagehand_rollout_duration_seconds_count":                 {"strategy": "Recreate", "result": "Complete"},
	"stagehand_hooks_total":                                    {"stage": "pre", "result": "Succeeded"},
	"stagehand_hook_duration_seconds_count":                    {"stage": "pre"},
	"stagehand_executionhook_executions_total":                 {"result": "Succeeded"},
	"stagehand_executionhook_execution_duration_seconds_count": {"result": "Succeeded"},
	"stagehand_defer_runs_total":                               {"when": "AfterTermination", "outcome": "Completed"},
	"workqueue_depth":                                          {"name": "deploymentconfig"},
	"workqueue_queue_duration_seconds_count":                   {"name": "deployerpod"},
	"rest_client_requests_total":                               {},
}

// forbiddenLabels would each hold a name per object: unbounded series.
var forbiddenLabels = []string{"dc", "deploymentconfig", "pod", "revision", "replicaset", "namespace", "uid", "node"}

// Scraped through its Service after a rollout that runs a hook pod, an exec hook and a
// DeferPolicy run, and one that fails, the leader exports every documented series, and no label of any series
// holds the name of a DC, pod, revision or namespace.
func TestMetricsScrapedThroughTheServiceAreDocumentedAndBounded(t *testing.T) {
	requireController(t)
	if !env.Local() {
		t.Skip("reads the Service through the apiserver's proxy to the local cluster's loopback endpoints")
	}
	ctx := context.Background()
	requireServiceNetwork(t, ctx)
	given := env.Given(t)
	createDeferPolicy(t, given.NS, "metered", nil, stagehandv1.DeferStep{Name: "note", Image: images.Shell,
		Command: []string{"/bin/sh", "-c", "echo handed over"}})
	dc := framework.NewDeploymentConfig("metered", 1, stagehandv1.DeploymentStrategyTypeRecreate)
	dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{
		Pre:  framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "true"),
		Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 30, "true"),
	}
	s := given.DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RecreateParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "exit 1")
		framework.SetVersion(dc, 3)
	}).Then().RevisionPhase(3, failed)

	names := []string{"metered", "metered-1", "metered-2", "metered-3", "metered-2-deploy", "metered-2-hook-pre", given.NS}
	var leader []framework.Series
	var sawStandby bool
	require.Eventually(t, func() bool {
		text, err := env.ScrapeControllerService(ctx)
		if err != nil {
			t.Logf("%v", err)
			return false
		}
		series := framework.ParseMetrics(text)
		if value(series, "stagehand_leader") != "1" {
			sawStandby = sawStandby || value(series, "stagehand_leader") == "0"
			return false
		}
		leader = series
		return len(missing(series)) == 0
	}, 2*time.Minute, time.Second, "the leader's metrics through the Service never had every documented series; missing: %v", missing(leader))
	t.Logf("the Service reached the standby too: %v", sawStandby)

	// Every series the Grafana dashboard queries is among them
	have := map[string]bool{}
	for _, s := range leader {
		have[s.Name] = true
	}
	for _, name := range dashboardSeries(t) {
		assert.True(t, have[name], "deploy/grafana/stagehand.json queries %s, which the leader does not export", name)
	}

	for _, s := range leader {
		for label, v := range s.Labels {
			assert.NotContains(t, forbiddenLabels, label, "series %s has a per-object label", s.Name)
			assert.False(t, slices.Contains(names, v), "series %s{%s=%q} holds an object's name", s.Name, label, v)
		}
	}
	pods, err := env.Kube.CoreV1().Pods(given.NS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		for _, s := range leader {
			for _, v := range s.Labels {
				assert.NotEqual(t, p.Name, v, "series %s holds pod name %s", s.Name, p.Name)
			}
		}
	}
}

// Read through the apiserver's pod proxy, both controller replicas are ready: the leader's
// /readyz says "ok: leader", the standby's says it is a standby and names the leader, so
// that kubectl and an operator can tell them apart.
func TestReadinessTellsTheLeaderFromTheStandby(t *testing.T) {
	requireController(t)
	if !env.Local() {
		t.Skip("reads the controller pods through the apiserver's proxy to the local cluster's pod IPs")
	}
	ctx := context.Background()
	requireServiceNetwork(t, ctx)
	waitForControllerReplicas(t, 2)
	leader, _ := env.WaitForLeader(t, "", time.Minute)
	standby := otherControllerPod(t, leader)
	readyz := func(pod string) string {
		raw, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).ProxyGet("http", pod, "8080", "/readyz", nil).DoRaw(ctx)
		if err != nil {
			return err.Error()
		}
		return string(raw)
	}
	require.Eventually(t, func() bool { return strings.HasPrefix(readyz(leader), "ok: leader") }, time.Minute, time.Second,
		"the leader %s answers /readyz with %q", leader, readyz(leader))
	require.Eventually(t, func() bool { return strings.Contains(readyz(standby), "standby, the leader is "+leader) }, time.Minute, time.Second,
		"the standby %s answers /readyz with %q", standby, readyz(standby))
}

// requireServiceNetwork skips (fails in CI) when the controller pods have loopback
// IPs, which no Service can reach: the local cluster could not route its pod network
// (docs/localcluster.md, "Pod IPs").
func requireServiceNetwork(t *testing.T, ctx context.Context) {
	t.Helper()
	pod := env.WaitForController(t)
	if strings.HasPrefix(pod.Status.PodIP, "127.") {
		gate.Require(t, "controller pod "+pod.Name+" has the loopback IP "+pod.Status.PodIP+
			": the local cluster could not route "+localcluster.PodNetwork+" (needs root and iproute2)")
	}
}

// dashboardSeries lists the controller's series that the shipped dashboard queries.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.RepoRoot, dashboard.Path))
	require.NoError(t, err)
	series, err := dashboard.Series(raw)
	require.NoError(t, err)
	require.NotEmpty(t, series)
	return series
}

func value(series []framework.Series, name string) string {
	for _, s := range series {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}

// missing lists the documented series, with their label set, that series lacks.
func missing(series []framework.Series) []string {
	var out []string
	for name, want := range documentedSeries {
		found := slices.ContainsFunc(series, func(s framework.Series) bool {
			if s.Name != name {
				return false
			}
			for k, v := range want {
				if s.Labels[k] != v {
					return false
				}
			}
			return true
		})
		if !found {
			out = append(out, name+labelsText(want))
		}
	}
	slices.Sort(out)
	return out
}

func labelsText(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}
