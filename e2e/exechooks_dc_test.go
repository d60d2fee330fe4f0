//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func dcExecHook(policy stagehandv1.LifecycleHookFailurePolicy, pods stagehandv1.ExecHookPods, timeout int64, script string) *stagehandv1.LifecycleHook {
	return &stagehandv1.LifecycleHook{FailurePolicy: policy, Exec: &stagehandv1.ExecHook{
		ContainerName: "app", Command: []string{"/bin/sh", "-c", script}, Pods: pods, TimeoutSeconds: &timeout}}
}

// executionHooksOf lists the ExecutionHooks of revision n of dc web, by name.
func executionHooksOf(t *testing.T, ns string, n int) map[string]*stagehandv1.ExecutionHook {
	t.Helper()
	list, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: stagehandv1.ConfigLabel + "=web," + stagehandv1.RevisionLabel + "=" + strconv.Itoa(n)})
	require.NoError(t, err)
	out := map[string]*stagehandv1.ExecutionHook{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// A Rolling DC with a pre exec hook on the Old pods and a post exec hook on the New pods
// runs each once per rollout, in the right pods (their output names the VERSION of the
// template they run). On the first rollout the pre hook has no old pods and is skipped.
func TestDeploymentConfigExecHooksRunInTheRightPods(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre:  dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsOld, 30, `echo "pre in version $VERSION"`),
		Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 30, `echo "post in version $VERSION"`),
	}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	s.When().TemplateChanged(2).Then().RevisionPhase(2, complete)

	first := executionHooksOf(t, s.NS, 1)
	require.Contains(t, first, "web-1-hook-post")
	assert.Equal(t, stagehandv1.HookErrorNoPods, first["web-1-hook-pre"].Status.Error.ErrorType, "no old pods on the first rollout")
	second := executionHooksOf(t, s.NS, 2)
	assert.Len(t, second, 2, "one hook per stage: %v", second)
	for name, want := range map[string]string{"web-1-hook-post": "post in version 1"} {
		checkEveryPod(t, first[name], 2, want)
	}
	for name, want := range map[string]string{"web-2-hook-pre": "pre in version 1", "web-2-hook-post": "post in version 2"} {
		require.Contains(t, second, name)
		checkEveryPod(t, second[name], 2, want)
	}
	assert.Contains(t, deployerLog(t, s.NS, "web-2"), "pre in version 1", "the deployer's log has the output")
}

// checkEveryPod asserts that h ran once in each of n pods, with output want.
func checkEveryPod(t *testing.T, h *stagehandv1.ExecutionHook, n int, want string) {
	t.Helper()
	assert.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, h.Name)
	require.Len(t, h.Status.HookStatuses, n, h.Name)
	for _, s := range h.Status.HookStatuses {
		assert.Equal(t, int32(1), s.Attempts, "%s %s", h.Name, s.PodName)
		assert.Equal(t, want, strings.TrimSpace(s.Output), "%s %s", h.Name, s.PodName)
	}
}

// A failing post exec hook: Abort fails the revision with the container and its output
// in the message and the previous revision serves; Ignore lets the rollout complete;
// Retry runs a second ExecutionHook.
func TestDeploymentConfigExecHookFailurePolicies(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)

	failing := `echo "cache flush failed in $VERSION"; exit 4`
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 2, failing)}
	}).Then().RevisionPhase(2, failed)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	msg := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	assert.Contains(t, msg, "exec hook web-2-hook-post failed")
	assert.Contains(t, msg, "/app Error")
	assert.Contains(t, msg, "cache flush failed in 2")
	s.Then().RevisionReplicas(1, 1)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Strategy.RollingParams.Post.FailurePolicy = stagehandv1.LifecycleHookFailurePolicyIgnore
	}).Then().RevisionPhase(3, complete)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 4)
		dc.Spec.Strategy.RollingParams.Post = dcExecHook(stagehandv1.LifecycleHookFailurePolicyRetry, stagehandv1.ExecHookPodsNew, 2, failing)
		dc.Spec.Strategy.RollingParams.Post.Retry = &stagehandv1.RetryParams{MaxAttempts: 2,
			Backoff: stagehandv1.RetryBackoff{InitialDelaySeconds: 1, MaxDelaySeconds: 1}}
	}).Then().RevisionPhase(4, failed)
	hooks := executionHooksOf(t, s.NS, 4)
	assert.Contains(t, hooks, "web-4-hook-post")
	assert.Contains(t, hooks, "web-4-hook-post-2", "Retry ran a second attempt")
}

// The deployer holds no pods/exec: it may create an ExecutionHook only as the exec hook
// of a revision (label stagehand.dev/exec-hook-of), and the controller runs such a hook
// only if it is exactly the exec hook of that revision's config snapshot, which the deployer
// may not change. A custom strategy (which runs as the deployer) gains no exec.
func TestDeployerCannotExecBeyondTheRevisionsExecHook(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Post: dcExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, stagehandv1.ExecHookPodsNew, 30, `echo "post hook"`)}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	ctx := context.Background()
	kube, sh := impersonating(t, "system:serviceaccount:"+s.NS+":"+stagehandv1.DeployerServiceAccountName)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)

	// An ExecutionHook of its own: refused, it may not exec.
	_, err = sh.StagehandV1alpha1().ExecutionHooks(s.NS).Create(ctx, selectorHook("mine", "a", "web"), dryRun)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pods/exec")

	// One that claims to be the revision's post hook, with another command: admitted, never run.
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}
	labels := map[string]string{stagehandv1.ConfigLabel: "web", stagehandv1.RevisionLabel: "1",
		stagehandv1.HookStageLabel: "post", stagehandv1.ExecHookOfLabel: rs.Name}
	meta := metav1.ObjectMeta{Name: "web-1-hook-post-99", Labels: labels, OwnerReferences: owner}
	_, err = sh.StagehandV1alpha1().HookActions(s.NS).Create(ctx, &stagehandv1.HookAction{ObjectMeta: meta,
		Action: stagehandv1.Action{Exec: &stagehandv1.ExecAction{Command: []string{"/bin/sh", "-c", "echo pwned"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	forged := &stagehandv1.ExecutionHook{ObjectMeta: meta, Spec: stagehandv1.ExecutionHookSpec{ActionName: meta.Name,
		PodSelection: stagehandv1.PodSelection{PodContainerSelector: &stagehandv1.PodContainerSelector{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, ContainerList: []string{"app"}}}}}
	_, err = sh.StagehandV1alpha1().ExecutionHooks(s.NS).Create(ctx, forged, metav1.CreateOptions{})
	require.NoError(t, err, "the policy lets the deployer create a revision's exec hook")
	h := waitHook(t, s.NS, meta.Name, "finished", finished)
	assert.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase)
	require.NotNil(t, h.Status.Error)
	assert.Equal(t, stagehandv1.HookErrorForbidden, h.Status.Error.ErrorType)
	assert.Contains(t, h.Status.Error.Message, "not the revision's exec hook's")
	assert.Empty(t, h.Status.HookStatuses, "nothing ran")

	// And it may not rewrite the snapshot to make its command the revision's.
	waitForPolicy(t, revisionSnapshotPolicy, func() error {
		latest, err := kube.AppsV1().ReplicaSets(s.NS).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Annotations[stagehandv1.ConfigSnapshotAnnotation] = strings.Replace(
			latest.Annotations[stagehandv1.ConfigSnapshotAnnotation], "post hook", "pwned", 1)
		_, err = kube.AppsV1().ReplicaSets(s.NS).Update(ctx, latest, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}
