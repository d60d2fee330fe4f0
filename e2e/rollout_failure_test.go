//go:build e2e

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// neverReady makes the template's pods run but never become ready.
func neverReady(dc *stagehandv1.DeploymentConfig) {
	dc.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 1"}}},
		PeriodSeconds: 1,
	}
}

// slowReady makes the template's pods become ready only after a few seconds.
func slowReady(dc *stagehandv1.DeploymentConfig) {
	dc.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 0"}}},
		InitialDelaySeconds: 6,
		PeriodSeconds:       1,
	}
}

func TestRolloutFailureRollsBackToThePreviousRevision(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 3, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](5)}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(3)

	// When revision 2's pods never become ready, its deployer times out (exit 4)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		neverReady(dc)
	}).Then().RevisionPhase(2, failed).
		// Then revision 1 serves again with every replica, and revision 2 runs none
		RevisionReplicas(1, 3).RevisionReplicas(2, 0).ReadyPods(3).
		DeploymentConfig("RolloutFailed", func(dc *stagehandv1.DeploymentConfig) bool {
			c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
			return c != nil && c.Reason == stagehandv1.ReasonRolloutFailed && dc.Status.Phase == failed
		})

	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], stagehandv1.ReasonTimedOut,
		"the revision's status-reason must carry the deployer's reason")
	warnings := warningEvents(t, s.NS)
	assert.True(t, containsAny(warnings, "web-2"), "no Warning event names web-2: %v", warnings)
}

func TestRolloutNewRevisionSupersedesARunningOne(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	live := env.RecordPods(t, s.NS, stagehandv1.DeployerPodForLabel)

	// When revision 2 is slow and revision 3 arrives while it runs
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		slowReady(dc)
	}).Then().RevisionPhase(2, stagehandv1.RevisionPhaseRunning)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
	}).
		// Then revision 2 is Failed/Superseded and revision 3 completes
		Then().RevisionPhase(2, failed).RevisionPhase(3, complete).ReadyPods(2).
		OneDeployerPodPerRevision(3)

	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], stagehandv1.ReasonSuperseded)
	assert.LessOrEqual(t, live.MaxAlive(), 1, "two deployer pods were active at once")
}

func TestRolloutDeployerPodKilledMidRollout(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRecreate)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// When revision 2 is running and its deployer pod is killed
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		neverReady(dc)
	}).Then().RevisionPhase(2, stagehandv1.RevisionPhaseRunning)
	require.NoError(t, env.Kube.CoreV1().Pods(s.NS).Delete(context.Background(), "web-2-deploy",
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

	// Then the revision fails with a clear reason and revision 1 serves again
	s.Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], "a failed revision must say why")
	assert.Equal(t, 1, s.Deployers()["web-2-deploy"], "a failed revision never gets a second deployer pod")
}

func warningEvents(t *testing.T, ns string) []string {
	t.Helper()
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, ev := range events.Items {
		if ev.Type == corev1.EventTypeWarning {
			out = append(out, ev.InvolvedObject.Name+" "+ev.Reason+": "+ev.Message)
		}
	}
	return out
}
