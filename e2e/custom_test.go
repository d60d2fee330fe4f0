//go:build e2e

package e2e

// Custom strategies end to end: a user's image as the deployer (examples/custom-strategy),
// the built-in image decorated with a user command and --until, and a custom deployer that
// fails.

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestCustomStrategyImageCompletesARollout(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 3, stagehandv1.DeploymentStrategyTypeCustom)
	dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: framework.ExampleStrategyImage()}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(3)

	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(3)
	pod, err := env.Kube.CoreV1().Pods(s.NS).Get(context.Background(), "web-2-deploy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, framework.ExampleStrategyImage(), pod.Spec.Containers[0].Image, "the user's image is the deployer")
	log := deployerLog(t, s.NS, "web-2")
	assert.Contains(t, log, "Canary", "the custom strategy's own progress lines are in the deployer log:\n%s", log)
	assert.Contains(t, log, "3 pods, maxSurge 1, maxUnavailable 0",
		"a Rolling step of a custom flow gets the Rolling defaults (25%% surge up, 25%% unavailable down):\n%s", log)
}

func TestCustomStrategyCanaryCheckFailureRollsBack(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeCustom)
	dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: framework.ExampleStrategyImage()}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// When the canary's check fails (nothing listens on the checked address)
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.CustomParams.Environment = []corev1.EnvVar{
			{Name: "CHECK_URL", Value: "http://127.0.0.1:1/healthz"},
			{Name: "CHECK_ATTEMPTS", Value: "1"},
			{Name: "CHECK_TIMEOUT", Value: "1s"},
		}
	}).
		// Then the revision fails with the strategy's reason and revision 1 serves
		Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).RevisionReplicas(2, 0).ReadyPods(2)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], "CanaryCheckFailed")
}

func TestCustomCommandWithUntilStopsHalfwayChecksAndFinishes(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)

	// When revision 2 runs the built-in strategy to 50%, a check, then the rest
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Command: []string{
			"/bin/sh", "-c", "stagehand-deployer --until=50% && echo smoke-test: half of the pods answer && stagehand-deployer",
		}}
	}).Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(4)

	// Then the log shows the first run stopping at 50%, the check, and the second run finishing
	log := deployerLog(t, s.NS, "web-2")
	check := strings.Index(log, "smoke-test: half of the pods answer")
	require.GreaterOrEqual(t, check, 0, "the check ran:\n%s", log)
	assert.Contains(t, log[:check], "Scaling web-2 up", "the first run scaled the new revision before the check:\n%s", log)
	assert.Contains(t, log[check:], "Success", "the second run finished after the check:\n%s", log)
}

func TestCustomStrategyThatExitsThreeFailsTheRevision(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy = stagehandv1.DeploymentStrategy{
			Type: stagehandv1.DeploymentStrategyTypeCustom,
			CustomParams: &stagehandv1.CustomDeploymentStrategyParams{
				Image:   images.Shell,
				Command: []string{"/bin/sh", "-c", "echo the custom strategy gives up; exit 3"},
			},
		}
	}).Then().RevisionPhase(2, failed).RevisionReplicas(1, 1).ReadyPods(1)

	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, rs.Annotations[stagehandv1.StatusReasonAnnotation], "the custom strategy gives up",
		"a deployer that writes no termination message is explained by its log (FallbackToLogsOnError)")
}
