//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// takeoverBound is how long a standby may take to lead after the leader's SIGKILL: the
// Lease's duration (15 s) plus two retry periods (2 s each, with jitter), plus slack
// for a loaded 2-CPU machine.
const takeoverBound = 30 * time.Second

// Two controller replicas run (deploy/); the leader is SIGKILLed, and its pod deleted,
// while a revision runs. The standby takes the Lease within the bound, the revision
// completes under it, and the revision had exactly one deployer pod.
func TestHATakeoverFinishesTheRolloutWithOneDeployerPod(t *testing.T) {
	requireController(t)
	if !env.Local() {
		t.Skip("kills a controller process: needs the local cluster")
	}
	ctx := context.Background()
	env.WaitForController(t)
	waitForControllerReplicas(t, 2)
	leader, _ := env.WaitForLeader(t, "", 60*time.Second)

	// Given a DC whose second rollout runs a 6-second pre hook
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 6")}
		dc.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})
	s.Then().RevisionPhase(2, stagehandv1.RevisionPhaseRunning)

	// When the leader is killed mid-rollout, and its pod is gone with it (as with its node):
	// the nodes are cordoned until the standby leads, so that the replacement pod cannot
	// start and race the standby for the Lease (a restarted container can win that race,
	// which is a takeover too, but not the standby's)
	standby := otherControllerPod(t, leader)
	env.CordonAllBut(t, "")
	killedAt := time.Now()
	require.Positive(t, env.KillPodProcesses(t, framework.ControllerNamespace, leader, "stagehand-controller"),
		"no process of the leader pod %s to kill", leader)
	require.NoError(t, env.Kube.CoreV1().Pods(framework.ControllerNamespace).Delete(ctx, leader,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	next, ledAt := env.WaitForLeader(t, leader, takeoverBound+30*time.Second)
	env.UncordonAll(t)
	t.Logf("leader %s killed; %s leads %.1fs later", leader, next, ledAt.Sub(killedAt).Seconds())

	// Then the standby leads within the bound and completes the rollout with one deployer pod
	assert.Equal(t, standby, next, "the standby, not the restarted leader, takes over")
	assert.Less(t, ledAt.Sub(killedAt), takeoverBound)
	s.Then().RevisionPhase(2, complete).ReadyPods(2).OneDeployerPodPerRevision(2)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rs.Annotations[stagehandv1.StatusReasonAnnotation], "Completed"), rs.Annotations[stagehandv1.StatusReasonAnnotation])
}

// waitForControllerReplicas waits until n controller pods run and are ready.
func waitForControllerReplicas(t *testing.T, n int) {
	t.Helper()
	env.WaitForPods(t, framework.ControllerNamespace, framework.ControllerSelector, 2*time.Minute,
		"ready controller pods", func(pods []*corev1.Pod) bool {
			ready := 0
			for _, p := range pods {
				if p.DeletionTimestamp == nil && framework.PodReady(p) {
					ready++
				}
			}
			return ready >= n
		})
}

func otherControllerPod(t *testing.T, not string) string {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: framework.ControllerSelector})
	require.NoError(t, err)
	for _, p := range pods.Items {
		if p.Name != not && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	t.Fatalf("no controller pod besides %s", not)
	return ""
}
