//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// Admission refuses what cannot run: both selections, neither, an empty command, a
// timeout out of range; each message names the field.
func TestExecutionHookAdmission(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	both := selectorHook("both", "a", "web")
	both.Spec.PodSelection.PodContainerNamesList = []stagehandv1.PodContainerNames{{PodName: "web-0"}}
	neither := selectorHook("neither", "a", "web")
	neither.Spec.PodSelection.PodContainerSelector = nil
	empty := selectorHook("empty", "a", "web")
	empty.Spec.PodSelection.PodContainerSelector.PodSelector = &metav1.LabelSelector{}
	for _, c := range []struct {
		hook *stagehandv1.ExecutionHook
		want string
	}{
		{both, "exactly one of podContainerNamesList and podContainerSelector"},
		{neither, "exactly one of podContainerNamesList and podContainerSelector"},
		{empty, "spec.podSelection.podContainerSelector.podSelector"},
	} {
		_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(ctx, c.hook, dryRun)
		require.Error(t, err, c.hook.Name)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", c.hook.Name, err)
		assert.Contains(t, err.Error(), c.want, c.hook.Name)
	}
	for _, c := range []struct {
		name    string
		command []string
		timeout int64
		want    string
	}{
		{"no-command", []string{}, 10, "action.exec.command"},
		{"empty-program", []string{""}, 10, "must start with a program"},
		{"too-long", []string{"true"}, 3601, "actionTimeoutSeconds"},
		{"zero", []string{"true"}, 0, "actionTimeoutSeconds"},
	} {
		a := &stagehandv1.HookAction{ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Action: stagehandv1.Action{Exec: &stagehandv1.ExecAction{Command: c.command}}, ActionTimeoutSeconds: &c.timeout}
		_, err := env.Stagehand.StagehandV1alpha1().HookActions(ns).Create(ctx, a, dryRun)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	// The spec cannot change once set.
	hookAction(t, ns, "a", 10, "true")
	h, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(ctx, selectorHook("fixed", "a", "nothing"), metav1.CreateOptions{})
	require.NoError(t, err)
	h.Spec.ActionName = "b"
	_, err = env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Update(ctx, h, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "immutable")
}

// Only a user who may exec into pods may create an ExecutionHook: stagehand-edit alone
// is refused with a message naming pods/exec; with create on pods/exec it is allowed.
func TestExecutionHookNeedsPodsExec(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	user := "hook-editor"
	bindEdit(t, ns, user)
	_, sh := impersonating(t, user)
	hook := selectorHook("h", "a", "web")
	waitForPolicy(t, runCodePolicy, func() error {
		_, err := sh.StagehandV1alpha1().ExecutionHooks(ns).Create(ctx, hook, dryRun)
		return err
	})
	_, err := sh.StagehandV1alpha1().ExecutionHooks(ns).Create(ctx, hook, dryRun)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "pods/exec")
	assert.Contains(t, err.Error(), "ExecutionHook h")

	grantPodsExec(t, ns, user)
	require.Eventually(t, func() bool {
		_, err := sh.StagehandV1alpha1().ExecutionHooks(ns).Create(ctx, hook, dryRun)
		return err == nil
	}, rbacPropagationTimeout, 200*time.Millisecond, "with create on pods/exec the hook is allowed")
}

// Admission refuses exec hooks that could select nothing, and names the field.
func TestDeploymentConfigExecHookAdmission(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	for name, c := range map[string]struct {
		mutate func(*stagehandv1.DeploymentConfig)
		want   string
	}{
		"new-in-pre": {func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
				Pre: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 10, "true")}
		}, "must be Old in a pre hook"},
		"old-in-post": {func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
				Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsOld, 10, "true")}
		}, "must be New in a post hook"},
		"exec-at-mid": {func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.Strategy.Type = stagehandv1.DeploymentStrategyTypeRecreate
			dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{
				Mid: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsAll, 10, "true")}
		}, "an exec hook cannot run at mid"},
		"unknown-container": {func(dc *stagehandv1.DeploymentConfig) {
			h := dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 10, "true")
			h.Exec.ContainerName = "nope"
			dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Post: h}
		}, "spec.strategy.rollingParams.post.exec.containerName"},
		"both-actions": {func(dc *stagehandv1.DeploymentConfig) {
			h := dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 10, "true")
			h.ExecNewPod = &stagehandv1.ExecNewPodHook{ContainerName: "app", Command: []string{"true"}}
			dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Post: h}
		}, "exactly one action"},
	} {
		dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
		c.mutate(dc)
		_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(context.Background(), dc, dryRun)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// A user bound only to stagehand-edit may not add an exec hook to a DeploymentConfig;
// the refusal names the field and pods/exec.
func TestDeploymentConfigExecHookNeedsPodsExec(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	user := "dc-editor"
	bindEdit(t, ns, user)
	_, sh := impersonating(t, user)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 10, "true")}
	waitForPolicy(t, runCodePolicy, func() error {
		_, err := sh.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, dryRun)
		return err
	})
	_, err := sh.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, dryRun)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.strategy.rollingParams.post.exec runs commands inside running containers")
	assert.Contains(t, err.Error(), "pods/exec")
	// A step hook and a failure hook that run commands in containers need it too
	stepped := dc.DeepCopy()
	stepped.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Steps:  []stagehandv1.RollingStep{{Hook: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, "", 10, "true")}},
		Failed: dcExecHook(stagehandv1.LifecycleHookFailurePolicyIgnore, stagehandv1.ExecHookPodsOld, 10, "true"),
	}
	_, err = sh.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, stepped, dryRun)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.strategy.rollingParams.failed.exec, spec.strategy.rollingParams.steps[].hook.exec run commands inside running containers")

	grantPodsExec(t, ns, user)
	require.Eventually(t, func() bool {
		_, err := sh.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, dryRun)
		return err == nil
	}, rbacPropagationTimeout, 200*time.Millisecond, "with create on pods/exec the exec hook is allowed")
	_, err = sh.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, stepped, dryRun)
	assert.NoError(t, err, "with create on pods/exec the step and failure exec hooks are allowed")
}

// bindEdit binds user to stagehand-edit in ns.
func bindEdit(t *testing.T, ns, user string) {
	t.Helper()
	_, err := env.Kube.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: stagehandEditClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// grantPodsExec gives user create on pods/exec in ns.
func grantPodsExec(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "exec"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
