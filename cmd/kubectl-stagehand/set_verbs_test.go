package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func withPreHook(dc *v1alpha1.DeploymentConfig) *v1alpha1.DeploymentConfig {
	dc.Spec.Strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Pre: &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry, Retry: &v1alpha1.RetryParams{MaxAttempts: 5},
		ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"./migrate"}, Env: []corev1.EnvVar{{Name: "DRY", Value: "1"}}},
	}}
	return dc
}

func TestSetEnv(t *testing.T) {
	t.Run("set and remove in every container, init containers included", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "env", "dc/hello", "FOO=bar", "GREETING-")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello env updated\n", r.stdout)
		spec := r.dc(t).Spec.Template.Spec
		assert.Equal(t, []corev1.EnvVar{{Name: "FOO", Value: "bar"}}, spec.Containers[0].Env)
		assert.Equal(t, []corev1.EnvVar{{Name: "FOO", Value: "bar"}}, spec.Containers[1].Env)
		assert.Equal(t, []corev1.EnvVar{{Name: "FOO", Value: "bar"}}, spec.InitContainers[0].Env)
	})
	t.Run("-c picks a container; the same value again writes nothing", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "env", "dc/hello", "-c", "app", "GREETING=hello")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello: env unchanged, nothing written\n", r.stdout)
		assert.Equal(t, 0, r.writes())
		r = runSet(t, helloDC(), nil, nil, "env", "dc/hello", "-c", "web", "A=1")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), `no container "web"; its containers: app, sidecar (init: migrate)`)
	})
	t.Run("--from=configmap adds a reference per key", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"log-level": "debug", "db.host": "db"}}
		r := runSet(t, helloDC(), []runtime.Object{cm}, nil, "env", "dc/hello", "-c", "app", "--from=configmap/settings", "--prefix=APP_")
		require.NoError(t, r.err)
		env := r.dc(t).Spec.Template.Spec.Containers[0].Env
		require.Len(t, env, 3)
		assert.Equal(t, "APP_DB_HOST", env[1].Name)
		assert.Equal(t, &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "db.host"}, env[1].ValueFrom.ConfigMapKeyRef)
		assert.Equal(t, "APP_LOG_LEVEL", env[2].Name)
	})
	t.Run("--from a missing object fails before any write", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "env", "dc/hello", "--from=secret/nope")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), `reading --from secret/nope: secrets "nope" not found`)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("--list prints the environment", func(t *testing.T) {
		dc := helloDC()
		dc.Spec.Template.Spec.Containers[0].Env = append(dc.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "PASSWORD",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
		r := runSet(t, dc, nil, nil, "env", "dc/hello", "--list")
		require.NoError(t, r.err)
		assert.Equal(t, "# init container migrate\n# container app\nGREETING=hello\n# PASSWORD from secret db, key password\n# container sidecar\n", r.stdout)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("--hook edits and lists the hook's environment", func(t *testing.T) {
		r := runSet(t, withPreHook(helloDC()), nil, nil, "env", "dc/hello", "--hook", "pre", "DRY-", "STEP=2")
		require.NoError(t, r.err)
		assert.Equal(t, []corev1.EnvVar{{Name: "STEP", Value: "2"}}, r.dc(t).Spec.Strategy.RollingParams.Pre.ExecNewPod.Env)
		assert.Equal(t, "GREETING", r.dc(t).Spec.Template.Spec.Containers[0].Env[0].Name, "the containers keep theirs")

		r = runSet(t, withPreHook(helloDC()), nil, nil, "env", "dc/hello", "--hook", "pre", "--list")
		require.NoError(t, r.err)
		assert.Equal(t, "# pre hook (execNewPod, from container app)\nDRY=1\n", r.stdout)
	})
	t.Run("--hook without such a hook names it", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "env", "dc/hello", "--hook", "post", "A=1")
		require.Error(t, r.err)
		assert.Equal(t, "deploymentconfig/hello: the Rolling strategy has no post hook: add one with kubectl stagehand set deployment-hook --post", r.err.Error())
		assert.Equal(t, 1, exitCode(r.err))
	})
	t.Run("usage mistakes exit 2", func(t *testing.T) {
		for _, args := range [][]string{
			{"env", "dc/hello"},
			{"env", "dc/hello", "FOO"},
			{"env", "dc/hello", "--list", "A=1"},
			{"env", "dc/hello", "--from=deployment/x"},
			{"env", "dc/hello", "--prefix=X_", "A=1"},
			{"env", "dc/hello", "--hook", "later", "A=1"},
			{"env", "dc/hello", "--hook", "pre", "-c", "app", "A=1"},
		} {
			r := runSet(t, helloDC(), nil, nil, args...)
			require.Error(t, r.err, "%q", args)
			assert.Equal(t, 2, exitCode(r.err), "%q: %v", args, r.err)
		}
	})
}

func TestSetResources(t *testing.T) {
	r := runSet(t, helloDC(), nil, nil, "resources", "dc/hello", "-c", "app", "--limits=cpu=200m,memory=512Mi", "--requests=cpu=100m")
	require.NoError(t, r.err)
	assert.Equal(t, "deploymentconfig.stagehand.dev/hello resource requirements updated\n", r.stdout)
	res := r.dc(t).Spec.Template.Spec.Containers[0].Resources
	assert.Equal(t, "512Mi", res.Limits.Memory().String())
	assert.Equal(t, "100m", res.Requests.Cpu().String())
	assert.Empty(t, r.dc(t).Spec.Template.Spec.Containers[1].Resources.Limits, "-c app leaves sidecar alone")

	bad := runSet(t, helloDC(), nil, nil, "resources", "dc/hello", "--limits=cpu=lots")
	require.Error(t, bad.err)
	assert.Equal(t, 2, exitCode(bad.err))
	assert.Contains(t, bad.err.Error(), "--limits: cpu=lots")
	bad = runSet(t, helloDC(), nil, nil, "resources", "dc/hello", "--requests=memory")
	assert.Contains(t, bad.err.Error(), "--requests:")
	bad = runSet(t, helloDC(), nil, nil, "resources", "dc/hello", "--requests=cpu=2", "--limits=cpu=1")
	require.Error(t, bad.err)
	assert.Contains(t, bad.err.Error(), "the cpu request 2 is above its limit 1")
	assert.Equal(t, 0, bad.writes())
}

func TestSetTriggers(t *testing.T) {
	t.Run("lists without a change flag", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "triggers", "dc/hello")
		require.NoError(t, r.err)
		assert.Equal(t, "NAME                     TYPE    VALUE                      AUTO\n"+
			"deploymentconfigs/hello  config                             true\n"+
			"deploymentconfigs/hello  image   reg/side:stable (sidecar)  true\n", r.stdout)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("--manual removes the ConfigChange trigger and turns image triggers manual; --auto brings them back", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--manual")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello triggers updated\n", r.stdout)
		manual := r.dc(t)
		require.Len(t, manual.Spec.Triggers, 1)
		assert.False(t, manual.Spec.Triggers[0].ImageChangeParams.Automatic)

		r = runSet(t, manual, nil, nil, "triggers", "dc/hello", "--auto")
		require.NoError(t, r.err)
		assert.Equal(t, helloDC().Spec.Triggers, r.dc(t).Spec.Triggers)

		r = runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--auto")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello: triggers unchanged, nothing written\n", r.stdout)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("--from-image adds a trigger; --remove-all leaves an empty list", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--from-image=reg/app:stable", "-c", "app")
		require.NoError(t, r.err)
		tr := r.dc(t).Spec.Triggers
		require.Len(t, tr, 3)
		assert.Equal(t, &v1alpha1.DeploymentTriggerImageChangeParams{Automatic: true, ContainerNames: []string{"app"}, From: v1alpha1.ImageReference{Image: "reg/app:stable"}}, tr[2].ImageChangeParams)

		r = runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--remove-all")
		require.NoError(t, r.err)
		assert.Equal(t, []v1alpha1.DeploymentTriggerPolicy{}, r.dc(t).Spec.Triggers)
	})
	t.Run("mistakes", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--manual", "--auto")
		assert.Equal(t, 2, exitCode(r.err))
		r = runSet(t, helloDC(), nil, nil, "triggers", "dc/hello", "--from-image=reg/x:1", "-c", "nope")
		require.Error(t, r.err)
		assert.Equal(t, 1, exitCode(r.err))
		assert.Contains(t, r.err.Error(), `no container "nope"`)
	})
}

func TestSetDeploymentHook(t *testing.T) {
	t.Run("a pre execNewPod hook on Rolling, Abort by default and -c the first container", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--pre", "-e", "STEP=1", "--", "/bin/sh", "-c", "exit 1")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello deployment hook updated\n", r.stdout)
		assert.Equal(t, &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, ExecNewPod: &v1alpha1.ExecNewPodHook{
			ContainerName: "app", Command: []string{"/bin/sh", "-c", "exit 1"}, Env: []corev1.EnvVar{{Name: "STEP", Value: "1"}}}},
			r.dc(t).Spec.Strategy.RollingParams.Pre)
	})
	t.Run("the same hook again writes nothing; an existing hook keeps its policy and retry", func(t *testing.T) {
		r := runSet(t, withPreHook(helloDC()), nil, nil, "deployment-hook", "dc/hello", "--pre", "-e", "DRY=1", "--", "./migrate")
		require.NoError(t, r.err)
		assert.Equal(t, "deploymentconfig.stagehand.dev/hello: deployment hook unchanged (pre), nothing written\n", r.stdout)
		assert.Equal(t, 0, r.writes())
	})
	t.Run("--remove takes it away", func(t *testing.T) {
		r := runSet(t, withPreHook(helloDC()), nil, nil, "deployment-hook", "dc/hello", "--pre", "--remove")
		require.NoError(t, r.err)
		assert.Nil(t, r.dc(t).Spec.Strategy.RollingParams.Pre)
	})
	t.Run("mid on Rolling is refused clearly; on Recreate it is set", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--mid", "--", "true")
		require.Error(t, r.err)
		assert.Equal(t, 1, exitCode(r.err))
		assert.Contains(t, r.err.Error(), "the Rolling strategy has no mid hook")
		dc := helloDC()
		dc.Spec.Strategy.Type = v1alpha1.DeploymentStrategyTypeRecreate
		r = runSet(t, dc, nil, nil, "deployment-hook", "dc/hello", "--mid", "--failure-policy=ignore", "-c", "sidecar", "--", "true")
		require.NoError(t, r.err)
		mid := r.dc(t).Spec.Strategy.RecreateParams.Mid
		assert.Equal(t, v1alpha1.LifecycleHookFailurePolicyIgnore, mid.FailurePolicy)
		assert.Equal(t, "sidecar", mid.ExecNewPod.ContainerName)
	})
	t.Run("--exec makes an exec hook in the old pods for pre", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--pre", "--exec", "--timeout=30s", "-o", "json", "--", "/bin/flush")
		require.NoError(t, r.err)
		assert.Contains(t, r.stdout, `"kind": "DeploymentConfig"`)
		assert.Equal(t, &v1alpha1.ExecHook{ContainerName: "app", Command: []string{"/bin/flush"}, Pods: v1alpha1.ExecHookPodsOld, TimeoutSeconds: ptrTo(int64(30))},
			r.dc(t).Spec.Strategy.RollingParams.Pre.Exec)
	})
	t.Run("--failed sets the failure hook; with --exec it runs in the old pods, and New is refused", func(t *testing.T) {
		r := runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--failed", "--failure-policy=Ignore", "--", "./migrate", "down")
		require.NoError(t, r.err)
		assert.Equal(t, &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore, ExecNewPod: &v1alpha1.ExecNewPodHook{
			ContainerName: "app", Command: []string{"./migrate", "down"}}}, r.dc(t).Spec.Strategy.RollingParams.Failed)
		dc := helloDC()
		dc.Spec.Strategy.Type = v1alpha1.DeploymentStrategyTypeRecreate
		r = runSet(t, dc, nil, nil, "deployment-hook", "dc/hello", "--failed", "--exec", "--", "/bin/undo")
		require.NoError(t, r.err)
		assert.Equal(t, v1alpha1.ExecHookPodsOld, r.dc(t).Spec.Strategy.RecreateParams.Failed.Exec.Pods)
		r = runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--failed", "--exec", "--pods=New", "--", "/bin/undo")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "it must be Old (it runs before the old revision serves again)")
	})
	t.Run("mistakes", func(t *testing.T) {
		for _, args := range [][]string{
			{"deployment-hook", "dc/hello", "--pre", "--failed", "--", "true"},
			{"deployment-hook", "dc/hello", "--", "true"},
			{"deployment-hook", "dc/hello", "--pre", "--post", "--", "true"},
			{"deployment-hook", "dc/hello", "--pre"},
			{"deployment-hook", "dc/hello", "--pre", "--failure-policy=sometimes", "--", "true"},
			{"deployment-hook", "dc/hello", "--pre", "--remove", "--", "true"},
			{"deployment-hook", "dc/hello", "--pre", "--exec", "--pods=New", "--", "true"},
			{"deployment-hook", "dc/hello", "--mid", "--exec", "--", "true"},
			{"deployment-hook", "dc/hello", "--post", "--exec", "-e", "A=1", "--", "true"},
			{"deployment-hook", "dc/hello", "--post", "--pods=New", "--", "true"},
		} {
			r := runSet(t, helloDC(), nil, nil, args...)
			require.Error(t, r.err, "%q", args)
			assert.Equal(t, 2, exitCode(r.err), "%q: %v", args, r.err)
		}
		r := runSet(t, helloDC(), nil, nil, "deployment-hook", "dc/hello", "--pre", "-v", "data", "--", "true")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), `no volume "data"`)
	})
}

func ptrTo[T any](v T) *T { return &v }
