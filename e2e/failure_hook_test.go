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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// failureOrder records, on watches started before the rollout, when the failure hook's
// runner pod was first seen finished and when revision 1 was first scaled up after it
// had been scaled down.
type failureOrder struct {
	mu         sync.Mutex
	hookDone   time.Time
	lowest     int32
	scaledUpAt time.Time
}

func watchFailureOrder(t *testing.T, ns string) *failureOrder {
	t.Helper()
	o := &failureOrder{lowest: -1}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env.InformPods(t, ns, stagehandv1.FailureHookForLabel, cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		p := obj.(*corev1.Pod)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.hookDone.IsZero() && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			o.hookDone = time.Now()
		}
	}})
	rss := env.Kube.AppsV1().ReplicaSets(ns)
	first := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = "metadata.name=web-1"
			return rss.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = "metadata.name=web-1"
			return rss.Watch(ctx, opts)
		},
	}, &appsv1.ReplicaSet{}, 0, cache.Indexers{})
	_, err := first.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		n := ptr.Deref(obj.(*appsv1.ReplicaSet).Spec.Replicas, 1)
		o.mu.Lock()
		defer o.mu.Unlock()
		switch {
		case o.lowest < 0 || n < o.lowest:
			o.lowest = n
		case n > o.lowest && o.scaledUpAt.IsZero():
			o.scaledUpAt = time.Now()
		}
	}})
	require.NoError(t, err)
	go first.RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), first.HasSynced))
	return o
}

// checkHookBeforeRollback asserts that revision 1 was scaled back up only after the
// failure hook's runner had finished.
func (o *failureOrder) checkHookBeforeRollback(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.False(t, o.hookDone.IsZero(), "the failure hook's runner was never seen finished")
	require.False(t, o.scaledUpAt.IsZero(), "revision 1 was never scaled back up (lowest %d)", o.lowest)
	assert.True(t, o.hookDone.Before(o.scaledUpAt), "revision 1 scaled up at %s, before the failure hook ended at %s", o.scaledUpAt, o.hookDone)
}

// failingRollout is a 2-replica Rolling DC (maxSurge 0, maxUnavailable 1: revision 1
// goes down to 1 pod) with a failed hook that says which version it undoes.
func failingRollout(timeout int64) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		TimeoutSeconds: &timeout, MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		Failed: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, `sleep 1; echo "undoing the migration of version $VERSION"`),
	}
	return dc
}

// checkFailureHookRanOnce asserts what every case shares: revision 2 Failed, one runner
// and one hook pod for it, the hook recorded Succeeded, its output in rollout logs, and
// revision 1 serving both replicas again.
func checkFailureHookRanOnce(t *testing.T, s *framework.Given) {
	t.Helper()
	s.Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)
	var state stagehandv1.FailureHookState
	var msg string
	require.Eventually(t, func() bool {
		state, msg = stagehandv1.FailureHookStateOf(revisionWeb(t, s.NS, 2))
		return state.Finished()
	}, framework.RolloutTimeout, 200*time.Millisecond, "the failure hook never finished (state %q)", state)
	assert.Equal(t, stagehandv1.FailureHookSucceeded, state, msg)
	created := s.Deployers()
	assert.Equal(t, 1, created["web-2-failure-hook"], "runner pods: %v", created)
	assert.Equal(t, 1, created["web-2-deploy"], "deployer pods: %v", created)
	hooks, err := env.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{
		LabelSelector: stagehandv1.HookStageLabel + "=" + stagehandv1.FailureHookStage})
	require.NoError(t, err)
	assert.Len(t, hooks.Items, 1, "one hook pod web-2-hook-failed")
	logs := pluginOK(t, s.NS, "rollout", "logs", "dc/web", "--revision", "2")
	assert.Contains(t, logs.Stdout, "undoing the migration of version 2")
	get := pluginOK(t, s.NS, "get", "dc/web")
	assert.Contains(t, get.Stdout, "failed hook Succeeded")
	assert.Contains(t, get.Stdout, "Failure-hook runner")
}

func TestFailureHookAfterAFailedPreHook(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(failingRollout(60))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo checking; exit 3")
		framework.SetVersion(dc, 2)
	})
	checkFailureHookRanOnce(t, s)
	assert.Equal(t, int32(2), ptr.Deref(revisionWeb(t, s.NS, 1).Spec.Replicas, 0), "revision 1 was never scaled")
}

func TestFailureHookAfterAReadinessTimeout(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(failingRollout(5))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	order := watchFailureOrder(t, s.NS)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2); neverReady(dc) })
	checkFailureHookRanOnce(t, s)
	order.checkHookBeforeRollback(t)
}

// The rollout is stopped once revision 1 is down to 1 pod: by rollout cancel, or by
// deleting the deployer pod.
func TestFailureHookAfterCancelAndADeletedDeployer(t *testing.T) {
	requireController(t)
	for _, stop := range []string{"cancel", "delete"} {
		t.Run(stop, func(t *testing.T) {
			s := env.Given(t).DeploymentConfig(failingRollout(120))
			s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
			order := watchFailureOrder(t, s.NS)
			s.When().Updated(func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2); neverReady(dc) }).
				Then().RevisionReplicas(1, 1)
			if stop == "cancel" {
				pluginOK(t, s.NS, "rollout", "cancel", "dc/web")
			} else {
				require.NoError(t, env.Kube.CoreV1().Pods(s.NS).Delete(context.Background(), "web-2-deploy", metav1.DeleteOptions{}))
			}
			checkFailureHookRanOnce(t, s)
			order.checkHookBeforeRollback(t)
		})
	}
}

// An exec failure hook runs in the old revision's pods (the default for a failed hook),
// through an ExecutionHook that the ExecutionHook controller verifies against the
// revision's snapshot, before revision 1 is scaled back up.
func TestFailureHookExecRunsInTheOldPods(t *testing.T) {
	requireController(t)
	dc := failingRollout(5)
	dc.Spec.Strategy.RollingParams.Failed = dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, "", 30, `echo "undo in version $VERSION"`)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	order := watchFailureOrder(t, s.NS)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2); neverReady(dc) }).
		Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)
	state, msg := stagehandv1.FailureHookStateOf(revisionWeb(t, s.NS, 2))
	assert.Equal(t, stagehandv1.FailureHookSucceeded, state, msg)
	hooks := executionHooksOf(t, s.NS, 2)
	require.Contains(t, hooks, "web-2-hook-failed")
	checkEveryPod(t, hooks["web-2-hook-failed"], 1, "undo in version 1")
	order.checkHookBeforeRollback(t)
}

// The first revision of a DC has nothing to roll back to: its failed hook still runs once.
func TestFailureHookRunsForTheFirstRevision(t *testing.T) {
	requireController(t)
	dc := failingRollout(60)
	dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "exit 3")
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, failed)
	require.Eventually(t, func() bool {
		state, _ := stagehandv1.FailureHookStateOf(revisionWeb(t, s.NS, 1))
		return state == stagehandv1.FailureHookSucceeded
	}, framework.RolloutTimeout, 200*time.Millisecond)
	assert.Equal(t, 1, s.Deployers()["web-1-failure-hook"])
	logs := pluginOK(t, s.NS, "rollout", "logs", "dc/web")
	assert.Contains(t, logs.Stdout, "undoing the migration of version 1")
}
