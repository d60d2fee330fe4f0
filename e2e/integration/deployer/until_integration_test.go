//go:build e2e

package deployer_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/hookpod"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

func TestHookPodInheritsFromTheTemplate(t *testing.T) {
	requireCluster(t)
	hook := shellHook(v1alpha1.LifecycleHookFailurePolicyAbort, `echo "MODE=$MODE KEEP=$KEEP"`,
		corev1.EnvVar{Name: "MODE", Value: "migrate"})
	hook.ExecNewPod.Volumes = []string{"data"}
	dc := testutil.DeploymentConfig("web", testutil.SimulatedImage, 1, recreateWithHooks(hook, nil, nil))
	spec := &dc.Spec.Template.Spec
	spec.ServiceAccountName = "hooks"
	spec.NodeSelector = map[string]string{corev1.LabelHostname: "stagehand-node-1"}
	spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	app := &spec.Containers[0]
	app.Env = []corev1.EnvVar{{Name: "MODE", Value: "serve"}, {Name: "KEEP", Value: "kept"}}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cache", MountPath: "/cache"}}
	ns := framework.CreateNamespace(t, kube)
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dc = createDeploymentConfig(t, stagehand, ns, dc)
	starts := watchHookStarts(t, ns)
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	r := deployWithin(t, ns, "web-1", "")

	require.Equal(t, v1alpha1.ExitComplete, r.code, "message: %+v", r.msg)
	assert.Contains(t, r.stdout, "pre: MODE=migrate KEEP=kept", "the hook's env wins, the template's stays")
	pod := starts.pod("web-1-hook-pre")
	require.NotNil(t, pod, "the watcher saw the hook pod")
	assert.Equal(t, "hooks", pod.Spec.ServiceAccountName)
	assert.Equal(t, map[string]string{corev1.LabelHostname: "stagehand-node-1"}, pod.Spec.NodeSelector)
	assert.Contains(t, pod.Spec.Tolerations, spec.Tolerations[0])
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, hookpod.ContainerName, c.Name)
	assert.Equal(t, testutil.SimulatedImage, c.Image)
	var volumes []string
	for _, v := range pod.Spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	assert.Contains(t, volumes, "data")
	assert.NotContains(t, volumes, "cache", "only the listed volumes")
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.Name)
	}
	assert.Contains(t, mounts, "data")
	assert.NotContains(t, mounts, "cache")
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	require.NotNil(t, pod.Spec.ActiveDeadlineSeconds)
	assert.Greater(t, *pod.Spec.ActiveDeadlineSeconds, int64(21000), "what is left of the default 6 h deadline")
	assert.Equal(t, "1", pod.Labels[v1alpha1.RevisionLabel])
	assert.Equal(t, "web", pod.Labels[v1alpha1.ConfigLabel])
	assert.Equal(t, "pre", pod.Labels[v1alpha1.HookStageLabel])
}

func TestUntilThenContinue(t *testing.T) {
	requireCluster(t)
	one := intstr.FromInt32(1)
	timeout := int64(30)
	rolling := v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
		RollingParams: &v1alpha1.RollingDeploymentStrategyParams{MaxSurge: &one, MaxUnavailable: &one, TimeoutSeconds: &timeout}}
	for name, strategy := range map[string]v1alpha1.DeploymentStrategy{"Recreate": recreateStrategy(30), "Rolling": rolling} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "order")
			env := corev1.EnvVar{Name: "HOOK_FILE", Value: file}
			abort := v1alpha1.LifecycleHookFailurePolicyAbort
			pre, post := shellHook(abort, appendStage("pre"), env), shellHook(abort, appendStage("post"), env)
			if strategy.RecreateParams != nil {
				strategy.RecreateParams.Pre, strategy.RecreateParams.Post = pre, post
			} else {
				strategy.RollingParams.Pre, strategy.RollingParams.Post = pre, post
			}
			dc := setup(t, testutil.SimulatedImage, 4, strategy)
			runningRevision(t, dc, 1, 4)
			createReplicaSet(t, kube, testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning))

			r := deployWithin(t, dc.Namespace, "web-2", "50%")
			require.Equal(t, v1alpha1.ExitComplete, r.code, "--until=50%%: %+v", r.msg)
			assert.Contains(t, r.msg.Message, "50%")
			assert.GreaterOrEqual(t, availablePods(t, dc.Namespace, "2"), 2)
			assert.Less(t, availablePods(t, dc.Namespace, "2"), 4, "it stopped halfway")
			assert.Equal(t, []string{"pre"}, fileLines(t, file), "no post hook before the rollout is whole")

			r = deployWithin(t, dc.Namespace, "web-2", "")
			require.Equal(t, v1alpha1.ExitComplete, r.code, "second run: %+v", r.msg)
			assert.Contains(t, r.stdout, "--> pre hook web-2-hook-pre: already succeeded")
			assert.Equal(t, []string{"pre", "post"}, fileLines(t, file), "each hook ran once over both runs")
			assert.Equal(t, 4, availablePods(t, dc.Namespace, "2"))
			assert.Equal(t, 0, availablePods(t, dc.Namespace, "1"))
			assert.Empty(t, hookPods(t, kube, dc.Namespace))
		})
	}
}

func TestUntilMidWithRollingIsInvalid(t *testing.T) {
	dc := setup(t, testutil.SimulatedImage, 1, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
	r := deployWithin(t, dc.Namespace, "web-1", "mid")
	assert.Equal(t, v1alpha1.ExitInvalid, r.code)
	assert.Contains(t, r.msg.Message, "--until=mid")
	assert.Equal(t, 0, availablePods(t, dc.Namespace, "1"), "nothing was scaled")
}

func TestCancelDuringAHookDeletesTheHookPod(t *testing.T) {
	requireCluster(t)
	dc := setup(t, testutil.SimulatedImage, 1, recreateWithHooks(
		shellHook(v1alpha1.LifecycleHookFailurePolicyAbort, `echo "a long migration"; sleep 60`), nil, nil))
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- deploy(ctx, t, dc.Namespace, "web-1", "") }()
	pods := kube.CoreV1().Pods(dc.Namespace)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, "web-1-hook-pre", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, nil
	})
	require.NoError(t, err, "the hook pod never ran")

	cancel() // what SIGTERM does
	cancelled := time.Now()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second): // generous: the hook sleeps 60 s, and only the cancellation ends it sooner
		t.Fatal("the deployer did not return within 30s of its cancellation")
	}
	t.Logf("the deployer returned %s after its cancellation", time.Since(cancelled).Round(time.Millisecond))

	// Then it exits Cancelled, and it has deleted the hook pod before it returned
	assert.Equal(t, v1alpha1.ExitCancelled, r.code)
	assert.Equal(t, v1alpha1.ReasonCancelled, r.msg.Reason)
	pod, err := pods.Get(context.Background(), "web-1-hook-pre", metav1.GetOptions{})
	if err == nil {
		assert.NotNil(t, pod.DeletionTimestamp, "the hook pod is being deleted")
	} else {
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	}
	// And the hook pod goes away
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "web-1-hook-pre", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	assert.NoError(t, err, "the hook pod web-1-hook-pre is still there a minute after the cancellation")
}
