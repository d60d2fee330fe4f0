package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/deferpolicy"
	"github.com/stagehand-dev/stagehand/controller/deployerpod"
	"github.com/stagehand-dev/stagehand/controller/deploymentconfig"
	"github.com/stagehand-dev/stagehand/controller/executionhook"
	"github.com/stagehand-dev/stagehand/controller/imagetrigger"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// forbiddenLabels are label names that would name an object: each value a new series.
var forbiddenLabels = []string{"dc", "deploymentconfig", "name", "pod", "revision", "replicaset", "namespace", "uid"}

// queueNames are the controllers' queues, the only values of the workqueue metrics' name
// label (client-go's convention, which Kubernetes dashboards expect).
var queueNames = []string{deploymentconfig.QueueName, deployerpod.QueueName, imagetrigger.QueueName,
	executionhook.QueueName, deferpolicy.QueueName}

// maxSeries bounds the process's time series, whatever the number of DCs: the rollout,
// hook, exec and defer metrics of every strategy, reason, stage and result, five queues,
// the client metrics and the Go and process collectors.
const maxSeries = 1000

// exercise records what n rollouts of distinct DCs record, through the paths the
// controller takes, and returns every object name it used.
func exercise(t *testing.T, metrics *plumbing.Metrics, leader *plumbing.LeaderStatus, from, n int) []string {
	t.Helper()
	var names []string
	queues := make([]interface{ ShutDown() }, 0, len(queueNames))
	ctx := context.Background()
	for _, q := range queueNames {
		queue := plumbing.NewQueue(q)
		queues = append(queues, queue)
		for i := from; i < from+n; i++ {
			ns, dc := namespaceOf(i), dcName(i)
			queue.Add(ns + "/" + dc + "-3")
			key, _ := queue.Get()
			if i%7 == 0 {
				queue.AddRateLimited(key) // a retry
			}
			queue.Forget(key)
			queue.Done(key)
		}
	}
	for _, q := range queues {
		q.ShutDown()
	}
	identity := "stagehand-controller-5c9d7-x2v7k_0b7e6f0a-6c1e-4c55-9a57-3f2f0d9f7d11"
	leader.Observed(identity)
	leader.Started()
	names = append(names, identity, "stagehand-controller-5c9d7-x2v7k")
	for i := from; i < from+n; i++ {
		rs := revisionOf(i, v1alpha1.RevisionPhaseRunning)
		ns, dc := rs.Namespace, dcName(i)
		names = append(names, ns, dc, rs.Name, string(rs.UID), v1alpha1.DeployerPodName(rs.Name),
			v1alpha1.HookPodName(rs.Name, "pre", 1), v1alpha1.FailureHookRunnerName(rs.Name), dc+"-smoke")
		metrics.RolloutStarted(phase.StrategyOf(rs))
		phase.RecordFinished(metrics, rs, transitionOf(i, rs, dc))
		if i%3 == 0 {
			metrics.HookFinished(v1alpha1.FailureHookStage, string(v1alpha1.FailureHookTimedOut), -1)
		}
		errorType := []v1alpha1.HookErrorType{"", v1alpha1.HookErrorError, v1alpha1.HookErrorTimeout}[i%3]
		metrics.ExecFinished(string(errorType), time.Duration(i)*time.Millisecond)
		started := time.Now().Add(-time.Minute)
		metrics.DeferFinished("AfterTermination", []string{"Completed", "Failed", "TimedOut", "Skipped"}[i%4], &started)
		u := url.URL{Scheme: "https", Host: "10.96.0.1:443", Path: "/apis/apps/v1/namespaces/" + ns + "/replicasets/" + rs.Name}
		clientmetrics.RateLimiterLatency.Observe(ctx, "PUT", u, time.Millisecond)
		clientmetrics.RequestLatency.Observe(ctx, "PUT", u, 20*time.Millisecond)
		clientmetrics.RequestResult.Increment(ctx, []string{"200", "409", "404"}[i%3], "PUT", u.Host)
	}
	return names
}

// transitionOf is the terminal transition of rollout i, with the hooks its deployer pod
// reported: some with a custom flow's stage named after the DC.
func transitionOf(i int, rs *appsv1.ReplicaSet, dc string) phase.Transition {
	hooks := []v1alpha1.HookOutcome{
		{Stage: "pre", Result: v1alpha1.HookResultSucceeded, Seconds: 3},
		{Stage: v1alpha1.StepStage(i%16 + 1), Result: v1alpha1.HookResultIgnored, Seconds: 8},
		{Stage: dc + "-smoke", Result: v1alpha1.HookResultSucceeded, Seconds: 1},
	}
	switch i % 4 {
	case 0:
		return phase.Transition{Phase: v1alpha1.RevisionPhaseComplete, Reason: v1alpha1.ReasonCompleted,
			Msg: "revision " + rs.Name + " is complete", Hooks: append(hooks, v1alpha1.HookOutcome{Stage: "post", Result: "Succeeded", Seconds: 2})}
	case 1:
		return phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonHookFailed,
			Msg: "the mid hook " + rs.Name + "-hook-mid failed", Hooks: append(hooks, v1alpha1.HookOutcome{Stage: "mid", Result: "Failed", Seconds: 60})}
	case 2:
		return phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonDeployerPodGone, Msg: "deployer pod no longer exists"}
	}
	return phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: "CanaryCheckFailed", Msg: "the canary of " + dc + " failed", Hooks: hooks}
}

func namespaceOf(i int) string { return fmt.Sprintf("team-%02d", i%40) }

func dcName(i int) string { return fmt.Sprintf("web-%04d", i) }

// revisionOf is revision 3 of DC i in phase p, with a snapshot of a strategy by i.
func revisionOf(i int, p v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	strategy := []v1alpha1.DeploymentStrategyType{v1alpha1.DeploymentStrategyTypeRolling, v1alpha1.DeploymentStrategyTypeRecreate,
		v1alpha1.DeploymentStrategyTypeCustom}[i%3]
	snapshot, _ := json.Marshal(v1alpha1.DeploymentConfigSpec{Strategy: v1alpha1.DeploymentStrategy{Type: strategy}}) // a plain struct
	dc := dcName(i)
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespaceOf(i), Name: v1alpha1.RevisionName(dc, 3), UID: types.UID(fmt.Sprintf("9d2c-%04d", i)),
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Duration(i) * time.Second)),
		Labels:            map[string]string{v1alpha1.ConfigLabel: dc, v1alpha1.RevisionLabel: "3"},
		Annotations:       map[string]string{v1alpha1.PhaseAnnotation: string(p), v1alpha1.ConfigSnapshotAnnotation: string(snapshot)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: revision.ConfigKind.GroupVersion().String(), Kind: revision.ConfigKind.Kind,
			Name: dc, UID: types.UID("dc-" + dc), Controller: ptr.To(true)}},
	}}
}

// revisionCache is a lister over the revisions of the DCs below n, in phases by number.
func revisionCache(n int) appslisters.ReplicaSetLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	phases := []v1alpha1.RevisionPhase{"New", "Pending", "Running", "Complete", "Failed"}
	for i := range n {
		_ = idx.Add(revisionOf(i, phases[i%len(phases)])) // an indexer's Add fails only without a key
	}
	return appslisters.NewReplicaSetLister(idx)
}

// processMetrics is the test process's newMetricsRegistry, with stagehand_rollouts over a
// cache of 1,000 revisions: client-go takes the first workqueue provider and client
// metrics of a process, so every run of the test (-count) shares one.
var processMetrics = sync.OnceValue(func() (p struct {
	reg     *prometheus.Registry
	metrics *plumbing.Metrics
	leader  *plumbing.LeaderStatus
}) {
	p.reg, p.metrics, p.leader = newMetricsRegistry()
	p.reg.MustRegister(plumbing.NewRolloutPhases(revisionCache(1000), func() bool { return true }))
	return p
})

// seriesOf counts the time series that reg gathers, as Prometheus stores them (a histogram
// is a series per bucket, +Inf included, and its sum and count).
func seriesOf(t *testing.T, reg prometheus.Gatherer) int {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				n += len(m.GetHistogram().GetBucket()) + 3
			case m.GetSummary() != nil:
				n += len(m.GetSummary().GetQuantile()) + 2
			default:
				n++
			}
		}
	}
	return n
}

// No label of the controller's metrics names an object, and the number of series does not
// grow with the number of DeploymentConfigs: 1,000 rollouts of distinct DCs give the same
// series as 100, under maxSeries.
func TestMetricsCardinalityIsBounded(t *testing.T) {
	p := processMetrics()
	reg, metrics, leader := p.reg, p.metrics, p.leader

	names := exercise(t, metrics, leader, 0, 100)
	first := seriesOf(t, reg)
	names = append(names, exercise(t, metrics, leader, 100, 900)...)
	all := seriesOf(t, reg)
	assert.Equal(t, first, all, "900 more DCs add no series")
	assert.Less(t, all, maxSeries)
	t.Logf("%d series", all)

	families, err := reg.Gather()
	require.NoError(t, err)

	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(f.GetName(), "workqueue_") && l.GetName() == "name" {
					assert.Contains(t, queueNames, l.GetValue(), "%s: only the fixed queue names", f.GetName())
					continue
				}
				assert.NotContains(t, forbiddenLabels, l.GetName(), "%s has a label that names an object", f.GetName())
				for _, name := range names {
					if strings.Contains(l.GetValue(), name) {
						t.Errorf("%s{%s=%q} holds the object name %q", f.GetName(), l.GetName(), l.GetValue(), name)
					}
				}
			}
		}
	}
	for _, want := range []string{"stagehand_leader", "stagehand_rollouts", "stagehand_rollouts_started_total", "stagehand_rollouts_completed_total",
		"stagehand_rollouts_failed_total", "stagehand_rollout_duration_seconds", "stagehand_hooks_total", "stagehand_hook_duration_seconds",
		"stagehand_executionhook_executions_total", "stagehand_defer_runs_total", "workqueue_adds_total", "workqueue_retries_total",
		"rest_client_requests_total", "rest_client_rate_limiter_duration_seconds"} {
		assert.True(t, seen[want], "%s was exercised and gathered", want)
	}
}
