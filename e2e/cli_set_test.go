//go:build e2e

package e2e

// kubectl stagehand set ... through the built binary: each verb's change starts (or, with
// manual triggers, does not start) the rollout a user expects.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// observed waits until the controller has acted on the DeploymentConfig's current generation.
func observed(t *testing.T, s *framework.Scenario) {
	t.Helper()
	gen := s.Get().Generation
	s.Then().DeploymentConfig("observedGeneration "+strconv.FormatInt(gen, 10), func(dc *stagehandv1.DeploymentConfig) bool {
		return dc.Status.ObservedGeneration >= gen
	})
}

func envValue(env []corev1.EnvVar, name string) (corev1.EnvVar, bool) {
	for _, v := range env {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.EnvVar{}, false
}

func TestCLISetImageStartsOneRevisionAndTheSameImageWritesNothing(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("hello", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// When the image is set, then exactly one revision starts and its pods run the new image
	res := pluginOK(t, s.NS, "set", "image", "dc/hello", "app="+imageOf(2))
	t.Logf("%s", res)
	assert.Equal(t, "deploymentconfig.stagehand.dev/hello image updated\n", res.Stdout)
	s.Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(1)
	pods, err := env.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{
		LabelSelector: stagehandv1.RevisionLabel + "=2,!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	assert.Equal(t, imageOf(2), pods.Items[0].Spec.Containers[0].Image)
	observed(t, s.Scenario)
	time.Sleep(time.Second) // the controller gathers revision events for up to 0.5 s
	before := s.Get()
	assert.Equal(t, int64(2), before.Status.LatestVersion, "one revision for one set image")

	// When the same image is set again, then nothing is written and the output says so
	res = pluginOK(t, s.NS, "set", "image", "dc/hello", "app="+imageOf(2))
	t.Logf("%s", res)
	assert.Equal(t, "deploymentconfig.stagehand.dev/hello: image unchanged (app="+imageOf(2)+"), nothing written\n", res.Stdout)
	after := s.Get()
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "nothing written")
	assert.Equal(t, int64(2), after.Status.LatestVersion)

	// When a server dry run asks for another image with -o yaml, then the result is printed
	// and nothing changes
	res = pluginOK(t, s.NS, "set", "image", "dc/hello", "app="+imageOf(3), "--dry-run=server", "-o", "yaml")
	t.Logf("%s", res)
	var printed stagehandv1.DeploymentConfig
	require.NoError(t, yaml.Unmarshal([]byte(res.Stdout), &printed), "stdout holds only the object")
	assert.Equal(t, "DeploymentConfig", printed.Kind)
	assert.Equal(t, imageOf(3), printed.Spec.Template.Spec.Containers[0].Image)
	now := s.Get()
	assert.Equal(t, after.Generation, now.Generation, "a server dry run changes nothing")
	assert.Equal(t, imageOf(2), now.Spec.Template.Spec.Containers[0].Image)

	// And an unknown container is named with the ones there are
	bad := plugin(t, s.NS, "set", "image", "dc/hello", "web=x:1")
	assert.Equal(t, 1, bad.ExitCode, "%s", bad)
	assert.Contains(t, bad.Stderr, `the pod template has no container "web"; its containers: app`)
}

func TestCLISetEnvSetsRemovesAddsFromAConfigMapAndLists(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("hello", 1, stagehandv1.DeploymentStrategyTypeRolling))
	_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"log-level": "debug"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	s.When().Created().Then().RevisionPhase(1, complete)

	// When a variable is set, then revision 2 runs with it
	res := pluginOK(t, s.NS, "set", "env", "dc/hello", "GREETING=hi")
	t.Logf("%s", res)
	s.Then().RevisionPhase(2, complete)
	v, ok := envValue(revisionTemplate(t, s.NS, "hello-2").Spec.Containers[0].Env, "GREETING")
	assert.True(t, ok)
	assert.Equal(t, "hi", v.Value)

	// When it is removed, then revision 3 runs without it
	pluginOK(t, s.NS, "set", "env", "dc/hello", "GREETING-")
	s.Then().RevisionPhase(3, complete)
	_, ok = envValue(revisionTemplate(t, s.NS, "hello-3").Spec.Containers[0].Env, "GREETING")
	assert.False(t, ok)

	// When a ConfigMap's keys are added, then revision 4 refers to them
	res = pluginOK(t, s.NS, "set", "env", "dc/hello", "--from=configmap/settings")
	t.Logf("%s", res)
	s.Then().RevisionPhase(4, complete).ReadyPods(1)
	v, ok = envValue(revisionTemplate(t, s.NS, "hello-4").Spec.Containers[0].Env, "LOG_LEVEL")
	require.True(t, ok)
	assert.Equal(t, &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "log-level"}, v.ValueFrom.ConfigMapKeyRef)

	// And --list prints the environment
	res = pluginOK(t, s.NS, "set", "env", "dc/hello", "--list")
	t.Logf("%s", res)
	assert.Equal(t, "# container app\nVERSION=1\n# LOG_LEVEL from configmap settings, key log-level\n", res.Stdout)
}

func TestCLISetTriggersManualStopsConfigRolloutsAndAutoBringsThemBack(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("hello", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)

	// When the triggers are set to manual, then a template change starts no rollout
	res := pluginOK(t, s.NS, "set", "triggers", "dc/hello", "--manual")
	t.Logf("%s", res)
	res = pluginOK(t, s.NS, "set", "triggers", "dc/hello")
	t.Logf("%s", res)
	assert.Contains(t, res.Stdout, "deploymentconfigs/hello  config")
	assert.Contains(t, res.Stdout, "false")
	pluginOK(t, s.NS, "set", "env", "dc/hello", "GREETING=hi")
	observed(t, s.Scenario)
	time.Sleep(2 * time.Second)
	assert.Equal(t, int64(1), s.Get().Status.LatestVersion, "no rollout while the triggers are manual")

	// When they are set to automatic again, then the waiting change rolls out
	res = pluginOK(t, s.NS, "set", "triggers", "dc/hello", "--auto")
	t.Logf("%s", res)
	s.Then().RevisionPhase(2, complete)
	v, ok := envValue(revisionTemplate(t, s.NS, "hello-2").Spec.Containers[0].Env, "GREETING")
	assert.True(t, ok)
	assert.Equal(t, "hi", v.Value)
	assert.Equal(t, "ConfigChange", revisionAnnotations(t, s.NS, "hello-2")[stagehandv1.CauseAnnotation])
}

func TestCLISetDeploymentHookAbortsTheNextRolloutAndRemoveTakesItAway(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("hello", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)

	// When a failing pre hook with the policy Abort is set, then the next rollout fails at it
	res := pluginOK(t, s.NS, "set", "deployment-hook", "dc/hello", "--pre", "--failure-policy=Abort", "--", "/bin/sh", "-c", "exit 1")
	t.Logf("%s", res)
	pre := s.Get().Spec.Strategy.RollingParams.Pre
	require.NotNil(t, pre)
	assert.Equal(t, []string{"/bin/sh", "-c", "exit 1"}, pre.ExecNewPod.Command)
	pluginOK(t, s.NS, "set", "env", "dc/hello", "VERSION=2")
	s.Then().RevisionPhase(2, failed).RevisionReplicas(1, 1)
	reason := revisionAnnotations(t, s.NS, "hello-2")[stagehandv1.StatusReasonAnnotation]
	assert.True(t, strings.HasPrefix(reason, "HookFailed"), "revision 2 failed at its hook: %s", reason)

	// When the hook is removed, then the next rollout completes
	res = pluginOK(t, s.NS, "set", "deployment-hook", "dc/hello", "--pre", "--remove")
	t.Logf("%s", res)
	assert.Nil(t, s.Get().Spec.Strategy.RollingParams.Pre)
	pluginOK(t, s.NS, "set", "env", "dc/hello", "VERSION=3")
	s.Then().RevisionPhase(3, complete).ReadyPods(1)

	// And mid is refused on Rolling, naming the reason
	bad := plugin(t, s.NS, "set", "deployment-hook", "dc/hello", "--mid", "--", "true")
	assert.Equal(t, 1, bad.ExitCode, "%s", bad)
	assert.Contains(t, bad.Stderr, "the Rolling strategy has no mid hook")
}
