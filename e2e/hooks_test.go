//go:build e2e

package e2e

// Lifecycle hooks end to end: hook pods run once per rollout at their stage, their logs reach
// the deployer's log, and the failure policies Abort, Retry and Ignore do what they say.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func recreateWithHooks(name string, replicas int32, pre, mid, post *stagehandv1.LifecycleHook) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig(name, replicas, stagehandv1.DeploymentStrategyTypeRecreate)
	dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{Pre: pre, Mid: mid, Post: post}
	return dc
}

func deployerLog(t *testing.T, ns, rs string) string {
	t.Helper()
	raw, err := env.Kube.CoreV1().Pods(ns).GetLogs(stagehandv1.DeployerPodName(rs), &corev1.PodLogOptions{}).DoRaw(context.Background())
	require.NoError(t, err, "reading the deployer's log")
	return string(raw)
}

func TestHooksRecreateRunsPreMidPostOnceEachAtTheirStage(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 2,
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook says hello"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo mid-hook migrating the database"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook telling the team"))
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	hooks := env.WatchHooks(t, s.NS, "web")
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(2)

	starts := hooks.Starts()
	require.Equal(t, []string{"pre", "mid", "post"}, hooks.Stages(), "each hook runs exactly once, in order")
	pre, mid, post := starts[0], starts[1], starts[2]
	assert.Equal(t, 2, pre.Ready["1"], "pre runs before anything is scaled: revision 1 still serves (%v)", pre.Ready)
	assert.Zero(t, pre.Pods["2"], "pre runs before revision 2 has pods")
	assert.Zero(t, mid.Pods["1"], "mid runs after the old pods are gone (%v)", mid.Pods)
	assert.Zero(t, mid.Pods["2"], "mid runs before the first new pod (%v)", mid.Pods)
	assert.Equal(t, 2, post.Ready["2"], "post runs after all new pods are ready (%v)", post.Ready)

	log := deployerLog(t, s.NS, "web-2")
	for _, line := range []string{"pre-hook says hello", "mid-hook migrating the database", "post-hook telling the team"} {
		assert.Contains(t, log, line, "the hook's output must be in kubectl logs web-2-deploy")
	}
}

func TestHooksAbortFailsTheRevisionWithTheHookLog(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 2, nil, nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	watcher := env.WatchPods(t, s.NS, "web")

	// When revision 2's pre hook fails with Abort
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RecreateParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort,
			"echo checking the schema; echo migration failed: table locked >&2; exit 1")
	}).
		// Then the revision is Failed with HookFailed and the log tail, and revision 1 still serves
		Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)

	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	reason := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	assert.Contains(t, reason, stagehandv1.ReasonHookFailed)
	assert.Contains(t, reason, "migration failed: table locked", "the failure message must carry the hook's log tail")
	assert.Contains(t, reason, "web-2-hook-pre", "the failure message must name the hook pod")
	_, mixed := watcher.MaxRevisionsAtOnce()
	for _, m := range mixed {
		assert.Zero(t, m["2"], "revision 2 must never get pods when its pre hook aborts")
	}
	assert.GreaterOrEqual(t, watcher.MinAvailable(), 2, "revision 1 kept serving")
}

func TestHooksRetryUntilSuccessAndUntilAttemptsRunOut(t *testing.T) {
	requireController(t)
	if !env.Local() {
		t.Skip("the hook keeps its attempt count in a host file, which only the local cluster (hooks as host processes) shares between attempts")
	}
	counter := filepath.Join(t.TempDir(), "attempts")
	// Fails on attempts 1 and 2, succeeds from attempt 3 on.
	script := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; echo attempt $n; [ $n -ge 3 ]`, counter)
	retry := func(maxAttempts int32) *stagehandv1.LifecycleHook {
		h := framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyRetry, script)
		h.Retry = &stagehandv1.RetryParams{MaxAttempts: maxAttempts, Backoff: stagehandv1.RetryBackoff{InitialDelaySeconds: 0, MaxDelaySeconds: 1}}
		return h
	}
	dc := recreateWithHooks("web", 1, retry(3), nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	hooks := env.WatchHooks(t, s.NS, "web")

	// When the pre hook fails twice and then succeeds, then the revision completes after 3 attempts
	s.When().Created().Then().RevisionPhase(1, complete)
	assert.Equal(t, []string{"pre", "pre", "pre"}, hooks.Stages(), "three attempts, each a new pod")
	started := eventsWithReason(t, s.NS, "HookStarted")
	assert.Len(t, started, 3, "every attempt is visible in the events: %v", started)

	// When the attempts are capped at 2 for the next revision, then it fails
	require.NoError(t, os.WriteFile(counter, []byte("0"), 0o644))
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RecreateParams.Pre = retry(2)
	}).Then().RevisionPhase(2, failed).RevisionReplicas(1, 1)
}

func TestHooksIgnoreLetsTheRolloutCompleteWithAWarning(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Post: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "echo notifying a webhook that is down; exit 7"),
	}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
	warnings := warningEvents(t, s.NS)
	assert.True(t, containsAny(warnings, "HookFailed"), "an ignored failure is still a Warning event: %v", warnings)
}

func TestHooksInheritFromTheTemplateContainer(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 1, nil, nil, nil)
	spec := &dc.Spec.Template.Spec
	spec.ServiceAccountName = "app-identity"
	spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	app := &spec.Containers[0]
	app.Env = append(app.Env, corev1.EnvVar{Name: "MODE", Value: "serve"}, corev1.EnvVar{Name: "KEEP", Value: "kept"})
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cache", MountPath: "/cache"}}
	hook := framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating")
	hook.ExecNewPod.Env = []corev1.EnvVar{{Name: "MODE", Value: "migrate"}}
	hook.ExecNewPod.Volumes = []string{"data"}
	dc.Spec.Strategy.RecreateParams.Mid = hook

	s := env.Given(t)
	_, err := env.Kube.CoreV1().ServiceAccounts(s.NS).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app-identity"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	hooks := env.WatchHooks(t, s.NS, "web")
	s.DeploymentConfig(dc).When().Created().Then().RevisionPhase(1, complete)

	require.Len(t, hooks.Starts(), 1)
	pod := hooks.Starts()[0].Pod
	assert.Equal(t, "app-identity", pod.Spec.ServiceAccountName)
	assert.Equal(t, spec.NodeSelector, pod.Spec.NodeSelector)
	assert.Contains(t, pod.Spec.Tolerations, spec.Tolerations[0])
	require.Len(t, pod.Spec.Containers, 1)
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "migrate", env["MODE"], "the hook's env wins")
	assert.Equal(t, "kept", env["KEEP"], "the container's other env is inherited")
	var volumes, mounts []string
	for _, v := range pod.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access") {
			volumes = append(volumes, v.Name)
		}
	}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if !strings.HasPrefix(m.Name, "kube-api-access") {
			mounts = append(mounts, m.Name)
		}
	}
	assert.Equal(t, []string{"data"}, volumes, "only the listed volumes")
	assert.Equal(t, []string{"data"}, mounts, "only the mounts of the listed volumes")
	assert.Equal(t, app.Image, pod.Spec.Containers[0].Image)
}

func TestHooksNewRevisionDuringALongPreHookSupersedesIt(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 1, nil, nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)

	// When revision 2's pre hook runs for a long time and revision 3 arrives
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RecreateParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo waiting; sleep 600")
	})
	env.WaitForPod(t, s.NS, stagehandv1.HookPodName("web-2", "pre", 1), framework.RolloutTimeout, "the long pre hook running",
		func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodRunning })
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Strategy.RecreateParams.Pre = nil
	}).
		// Then the hook pod is deleted, revision 2 is superseded and revision 3 completes
		Then().RevisionPhase(2, failed).RevisionPhase(3, complete).ReadyPods(1)
	env.WaitForPod(t, s.NS, stagehandv1.HookPodName("web-2", "pre", 1), framework.RolloutTimeout, "the superseded hook pod gone",
		func(p *corev1.Pod) bool { return p == nil })
}

func eventsWithReason(t *testing.T, ns, reason string) []string {
	t.Helper()
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, ev := range events.Items {
		if ev.Reason == reason {
			for i := int32(0); i < max(ev.Count, 1); i++ {
				out = append(out, ev.Message)
			}
		}
	}
	return out
}

func TestHooksFailedPostHookWithAbortRollsBack(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// When revision 2's pods come up but its post hook fails with Abort
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Post: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo end-to-end check failed; exit 1"),
		}
	}).
		// Then the revision fails and the automatic rollback brings revision 1 back
		Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).RevisionReplicas(2, 0).ReadyPods(2)
	env.WaitForPods(t, s.NS, "app=web", framework.RolloutTimeout, "only revision 1's pods", func(pods []*corev1.Pod) bool {
		for _, p := range pods {
			if p.Labels[stagehandv1.RevisionLabel] != "1" {
				return false
			}
		}
		return len(pods) == 2
	})
}
