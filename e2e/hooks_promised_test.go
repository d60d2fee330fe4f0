//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// Hooks that run as promised (DESIGN.md §4 invariant 11): a retry runs every hook again,
// a retry waits for a failure hook that runs, and an exec hook with no pod to run in is
// recorded NotRun, never Succeeded.

// dcEventsWith waits until the DC web's events include one with reason, and returns
// their messages.
func dcEventsWith(t *testing.T, ns, reason string) []string {
	t.Helper()
	var msgs []string
	require.Eventually(t, func() bool {
		list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=web,reason=" + reason})
		require.NoError(t, err)
		msgs = msgs[:0]
		for _, e := range list.Items {
			msgs = append(msgs, e.Message)
		}
		return len(msgs) > 0
	}, 20*time.Second, 200*time.Millisecond, "a %s event on dc/web", reason)
	return msgs
}

// waitRetriedAndFailed waits until revision n of web was retried and has Failed again.
func waitRetriedAndFailed(t *testing.T, ns string, n int) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	require.Eventually(t, func() bool {
		rs = revisionWeb(t, ns, n)
		return rs.Annotations[stagehandv1.RetriedAtAnnotation] != "" &&
			rs.Annotations[stagehandv1.PhaseAnnotation] == string(stagehandv1.RevisionPhaseFailed)
	}, framework.RolloutTimeout, 200*time.Millisecond, "revision %d was never retried and failed again", n)
	return rs
}

// A pre exec hook that succeeded, in a rollout that then failed (its pods never become
// ready), runs again on rollout retry: a new ExecutionHook, not the old one adopted as
// "already succeeded".
func TestRetryRunsTheExecHooksAgain(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To(int64(4)),
		MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		neverReady(dc)
		dc.Spec.Strategy.RollingParams.Pre = dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort,
			stagehandv1.ExecHookPodsOld, 30, `echo "pre hook in version $VERSION"`)
	}).Then().RevisionPhase(2, failed)
	first := executionHooksOf(t, s.NS, 2)["web-2-hook-pre"]
	require.NotNil(t, first, "the first run's pre hook")
	require.Equal(t, stagehandv1.ExecutionHookComplete, first.Status.Phase)

	pluginOK(t, s.NS, "rollout", "retry", "dc/web")
	waitRetriedAndFailed(t, s.NS, 2)

	second := executionHooksOf(t, s.NS, 2)["web-2-hook-pre"]
	require.NotNil(t, second, "the retried run's pre hook")
	assert.NotEqual(t, first.UID, second.UID, "the retry ran the pre hook again, in a new ExecutionHook")
	checkEveryPod(t, second, 1, "pre hook in version 1")
	log := deployerLog(t, s.NS, "web-2")
	assert.Contains(t, log, "pre hook web-2-hook-pre: succeeded")
	assert.NotContains(t, log, "already succeeded")
}

// An exec failed hook (on the old pods, its default) that finds no pod to run in is
// recorded NotRun with the reason and a Warning event, never Succeeded, and the rollback
// goes on: on a first revision (no old pods at all), and on a Recreate rollout that
// failed at its mid hook (the old pods have stopped).
func TestFailureHookWithNoPodToRunInIsRecordedNotRun(t *testing.T) {
	requireController(t)
	undo := dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, "", 30, `echo undo`)
	cases := map[string]func(t *testing.T) (*framework.Given, int){
		"first revision": func(t *testing.T) (*framework.Given, int) {
			dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
			dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
				Pre:    framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "exit 3"),
				Failed: undo.DeepCopy()}
			s := env.Given(t).DeploymentConfig(dc)
			s.When().Created().Then().RevisionPhase(1, failed)
			return s, 1
		},
		"recreate failed at mid": func(t *testing.T) (*framework.Given, int) {
			dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRecreate)
			dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{Failed: undo.DeepCopy()}
			s := env.Given(t).DeploymentConfig(dc)
			s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
			s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
				framework.SetVersion(dc, 2)
				dc.Spec.Strategy.RecreateParams.Mid = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "exit 3")
			}).Then().RevisionPhase(2, failed).RevisionReplicas(1, 1)
			return s, 2
		},
	}
	for name, given := range cases {
		t.Run(name, func(t *testing.T) {
			s, n := given(t)
			var state stagehandv1.FailureHookState
			var msg string
			require.Eventually(t, func() bool {
				state, msg = stagehandv1.FailureHookStateOf(revisionWeb(t, s.NS, n))
				return state.Finished()
			}, framework.RolloutTimeout, 200*time.Millisecond, "the failure hook never finished (state %q)", state)
			assert.Equal(t, stagehandv1.FailureHookNotRun, state, msg)
			assert.Contains(t, msg, "no running pod to run in")
			events := dcEventsWith(t, s.NS, stagehandv1.EventFailureHookNotRun)
			assert.Contains(t, events[0], "was not run")
		})
	}
}

// rsTrail records, from a watch started before the retry, each (phase, failure-hook
// state) that revision web-2 goes through.
type rsTrail struct {
	mu    sync.Mutex
	steps []string
}

func watchTrail(t *testing.T, ns string) *rsTrail {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web-2"})
	require.NoError(t, err)
	tr := &rsTrail{}
	go func() {
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			state, _ := stagehandv1.FailureHookStateOf(rs)
			step := rs.Annotations[stagehandv1.PhaseAnnotation] + "/" + string(state)
			tr.mu.Lock()
			if n := len(tr.steps); n == 0 || tr.steps[n-1] != step {
				tr.steps = append(tr.steps, step)
			}
			tr.mu.Unlock()
		}
	}()
	return tr
}

func (tr *rsTrail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.steps...)
}

// rollout retry while the failed hook runs: the plugin says the retry waits, the hook
// finishes (Succeeded, not cut off half-way), and only then is the revision reset to New.
func TestRetryWaitsForTheRunningFailureHook(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Failed: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, `echo "undo started"; sleep 5; echo "undo finished"`)}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
	trail := watchTrail(t, s.NS)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "exit 3")
	}).Then().RevisionPhase(2, failed)
	require.Eventually(t, func() bool {
		state, _ := stagehandv1.FailureHookStateOf(revisionWeb(t, s.NS, 2))
		return state == stagehandv1.FailureHookRunning
	}, framework.RolloutTimeout, 100*time.Millisecond, "the failure hook never ran")

	res := pluginOK(t, s.NS, "rollout", "retry", "dc/web")
	assert.Contains(t, res.Stdout, "The retry waits: the failed hook of web-2 has not finished")
	waitRetriedAndFailed(t, s.NS, 2)

	steps := trail.get()
	t.Logf("web-2 went through %v", steps)
	succeeded, reset := -1, -1
	for i, step := range steps {
		if succeeded < 0 && step == "Failed/Succeeded" {
			succeeded = i
		}
		if reset < 0 && i > 0 && step == "New/" { // the first New/ is web-2's creation
			reset = i
		}
	}
	require.GreaterOrEqual(t, reset, 0, "revision web-2 was never reset to New: %v", steps)
	assert.True(t, succeeded >= 0 && succeeded < reset, "the failure hook did not finish before the retry reset web-2: %v", steps)
	assert.NotEmpty(t, dcEventsWith(t, s.NS, stagehandv1.EventRetryWaitsForFailureHook))
}
