//go:build e2e

package chaos

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// notReadyWithin is how soon the DC and rollout status must say that the deployer's node
// is not Ready: the node controller's grace period (50 s, its default) after the node's
// last heartbeat (every 10 s), plus the controller's reaction.
const notReadyWithin = 60 * time.Second

// A deployer pod whose node stops: within 60 s the DC's Progressing condition and rollout
// status name the pod and the node; nothing else happens while the node may come back.
// Then the node is lost for good and deleted: the revision fails with DeployerNodeLost,
// the automatic rollback brings revision 1 back to full size, and revision 2 never had a
// second deployer pod.
func TestLostNodeFailsTheRevisionWithDeployerNodeLost(t *testing.T) {
	requireLocalCluster(t)
	ctx := context.Background()
	s, node, status := deployerOnStoppedNode(t, ctx)

	// When the node is lost and deleted
	require.NoError(t, env.Cluster().LoseNode(node))
	require.NoError(t, env.Kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}))

	// Then revision 2 fails with DeployerNodeLost, and revision 1 is back at full size
	s.Then().RevisionPhase(2, stagehandv1.RevisionPhaseFailed)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "DeployerNodeLost: deployer pod web-2-deploy: node "+node+" was deleted",
		rs.Annotations[stagehandv1.StatusReasonAnnotation])
	s.Then().RevisionReplicas(1, 2).ReadyPods(2).OneDeployerPodPerRevision(2)
	out := <-status
	assert.Contains(t, out, "revision web-2 is waiting: deployer pod web-2-deploy: node "+node+" NotReady for",
		"rollout status says it too")
	assert.Contains(t, out, "DeployerNodeLost")
}

// The other way a deployer is lost: its node stays NotReady and the pod is force-deleted
// (as an operator does for a node that will not come back, or the taint manager after its
// toleration). The revision fails with DeployerNodeLost, not the plain DeployerPodGone,
// and no second deployer pod starts; the node that comes back does not revive it.
func TestDeployerPodGoneFromANotReadyNodeFailsWithDeployerNodeLost(t *testing.T) {
	requireLocalCluster(t)
	ctx := context.Background()
	s, node, status := deployerOnStoppedNode(t, ctx)

	// When the deployer pod is force-deleted while its node is NotReady
	require.NoError(t, env.Kube.CoreV1().Pods(s.NS).Delete(ctx, "web-2-deploy",
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

	// Then revision 2 fails with DeployerNodeLost, and revision 1 is back at full size
	s.Then().RevisionPhase(2, stagehandv1.RevisionPhaseFailed)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	reason := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	assert.True(t, strings.HasPrefix(reason, "DeployerNodeLost: deployer pod web-2-deploy: node "+node+" NotReady for "), reason)
	assert.True(t, strings.HasSuffix(reason, ", and the pod is gone"), reason)
	s.Then().RevisionReplicas(1, 2).OneDeployerPodPerRevision(2)
	assert.Contains(t, <-status, "DeployerNodeLost")

	// And when the node comes back, its pods of revision 1 are ready again and the revision
	// stays failed: the old deployer, whose pod object is gone, does not resume it
	require.NoError(t, env.Cluster().StartNode(ctx, node))
	s.Then().ReadyPods(2).RevisionPhase(2, stagehandv1.RevisionPhaseFailed).OneDeployerPodPerRevision(2)
}

// deployerOnStoppedNode rolls out revision 2 of dc/web with its deployer, in a long pre
// hook, on a node that runs no controller, and stops that node (it is started again when
// the test ends). It returns once the DC's Progressing condition says within 60 s that the
// node is NotReady, with the node and the output of a rollout status that follows it.
func deployerOnStoppedNode(t *testing.T, ctx context.Context) (*framework.Given, string, <-chan string) {
	t.Helper()
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete).ReadyPods(2)

	free := nodeWithoutController(t, ctx)
	env.CordonAllBut(t, free)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 600")}
		framework.SetVersion(dc, 2)
	})
	s.Then().RevisionPhase(2, stagehandv1.RevisionPhaseRunning)
	env.UncordonAll(t)
	deployer, err := env.Kube.CoreV1().Pods(s.NS).Get(ctx, "web-2-deploy", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, free, deployer.Spec.NodeName)

	require.NoError(t, env.Cluster().StopNode(free))
	t.Cleanup(func() { _ = env.Cluster().StartNode(context.Background(), free) })
	stopped := time.Now()
	want := "deployer pod web-2-deploy: node " + free + " NotReady for"
	status := followStatus(ctx, s.NS)
	s.Then().DeploymentConfig("Progressing says the deployer's node is NotReady", func(dc *stagehandv1.DeploymentConfig) bool {
		for _, c := range dc.Status.Conditions {
			if c.Type == stagehandv1.ConditionProgressing && strings.Contains(c.Message, want) {
				return true
			}
		}
		return false
	})
	saidAfter := time.Since(stopped)
	t.Logf("the DC said the node is NotReady %.1fs after it stopped", saidAfter.Seconds())
	assert.Less(t, saidAfter, notReadyWithin)
	assert.Equal(t, stagehandv1.RevisionPhaseRunning, revisionPhase(t, ctx, s.NS, "web-2"), "the node may come back: nothing fails yet")
	return s, free, status
}

// followStatus runs rollout status in the background and hands over its output when it
// ends (with the revision).
func followStatus(ctx context.Context, ns string) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := env.Plugin(ctx, ns, nil, "rollout", "status", "dc/web", "--timeout", "5m")
		if err != nil {
			out <- err.Error()
			return
		}
		out <- res.String()
	}()
	return out
}

func revisionPhase(t *testing.T, ctx context.Context, ns, name string) stagehandv1.RevisionPhase {
	t.Helper()
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return stagehandv1.RevisionPhase(rs.Annotations[stagehandv1.PhaseAnnotation])
}

// nodeWithoutController is a Ready node that runs no controller pod.
func nodeWithoutController(t *testing.T, ctx context.Context) string {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).List(ctx, metav1.ListOptions{LabelSelector: framework.ControllerSelector})
	require.NoError(t, err)
	var used []string
	for _, p := range pods.Items {
		used = append(used, p.Spec.NodeName)
	}
	for _, n := range env.Cluster().NodeNames() {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err == nil && !slices.Contains(used, n) && !node.Spec.Unschedulable {
			return n
		}
	}
	t.Fatalf("every node runs a controller pod (%v)", used)
	return ""
}
