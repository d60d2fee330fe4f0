//go:build e2e

package e2e

// The kubectl plugin end to end: every test runs the real bin/kubectl-stagehand binary
// against the suite's cluster, the way an operator would.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// plugin runs kubectl stagehand in ns and fails the test when the binary cannot run.
func plugin(t *testing.T, ns string, args ...string) framework.PluginResult {
	t.Helper()
	res, err := env.Plugin(context.Background(), ns, nil, args...)
	require.NoError(t, err)
	return res
}

// pluginOK runs kubectl stagehand and requires exit 0.
func pluginOK(t *testing.T, ns string, args ...string) framework.PluginResult {
	t.Helper()
	res := plugin(t, ns, args...)
	require.Equal(t, 0, res.ExitCode, "%s", res)
	return res
}

func revisionAnnotations(t *testing.T, ns, rs string) map[string]string {
	t.Helper()
	got, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), rs, metav1.GetOptions{})
	require.NoError(t, err)
	return got.Annotations
}

func TestCLILatestStartsAManualRolloutAndRefusesASecondOneInFlight(t *testing.T) {
	requireController(t)
	// Given a config without triggers: nothing rolls out on its own
	dc := recreateWithHooks("web", 1, framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 4; echo pre done"), nil, nil)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{}
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created()

	// When latest is run, then revision 1 rolls out with the cause Manual
	res := pluginOK(t, s.NS, "rollout", "latest", "dc/web")
	assert.Contains(t, res.Stdout, "rollout of revision 1 requested")
	s.Then().RevisionPhase(1, complete).ReadyPods(1)

	// When latest is run again on the unchanged config, then revision 2 starts (Manual)
	res = pluginOK(t, s.NS, "rollout", "latest", "web", "--message", "redeploy to pick up the new secret")
	assert.Contains(t, res.Stdout, "rollout of revision 2 requested")

	// And a third request while revision 2 is in flight is refused, saying why
	again := plugin(t, s.NS, "rollout", "latest", "dc/web")
	assert.Equal(t, 1, again.ExitCode, "%s", again)
	assert.Contains(t, again.Stderr, "in flight")
	s.Then().RevisionPhase(2, stagehandv1.RevisionPhaseRunning)
	again = plugin(t, s.NS, "rollout", "latest", "dc/web")
	assert.Equal(t, 1, again.ExitCode, "%s", again)
	assert.Contains(t, again.Stderr, "revision web-2 is Running")

	s.Then().RevisionPhase(2, complete).ReadyPods(1)
	assert.Equal(t, "Manual", revisionAnnotations(t, s.NS, "web-2")[stagehandv1.CauseAnnotation])
	got := s.Get()
	assert.Equal(t, int64(2), got.Status.LatestVersion, "exactly one revision per request")
	assert.Equal(t, "redeploy to pick up the new secret", got.Status.Details.Message)
	_, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-3", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the refused requests created nothing")
}

func TestCLICancelDuringALongPreHook(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// Given revision 2 sits in a long pre hook
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating; sleep 300"),
		}
	})
	env.WaitForPods(t, s.NS, stagehandv1.HookStageLabel+"=pre", framework.RolloutTimeout, "a running pre hook pod", func(pods []*corev1.Pod) bool {
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning
	})

	// When it is cancelled
	res := pluginOK(t, s.NS, "rollout", "cancel", "dc/web")
	assert.Contains(t, res.Stdout, "revision web-2 cancelled")
	assert.Contains(t, res.Stdout, "revision web-1 serves again")

	// Then it is Failed/Cancelled, its deployer and hook pods are gone, and web-1 serves in full
	s.Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).ReadyPods(2)
	assert.True(t, strings.HasPrefix(revisionAnnotations(t, s.NS, "web-2")[stagehandv1.StatusReasonAnnotation], "Cancelled"))
	env.WaitForPods(t, s.NS, stagehandv1.RevisionLabel+"=2", framework.RolloutTimeout, "no pod of revision 2", func(pods []*corev1.Pod) bool {
		return len(pods) == 0
	})

	// And a second cancel says that nothing is in progress
	again := plugin(t, s.NS, "rollout", "cancel", "dc/web")
	assert.Equal(t, 1, again.ExitCode, "%s", again)
	assert.Contains(t, again.Stderr, "no rollout of deploymentconfig/web is in progress")
}

func TestCLIRetryRunsTheFixedRevisionAgain(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	// Given a pre hook that succeeds only when a ConfigMap says so
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flags"}, Data: map[string]string{"migration-ready": "no"}}
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)
	hook := framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, `echo "migration ready: $READY"; test "$READY" = yes`)
	hook.ExecNewPod.Env = []corev1.EnvVar{{Name: "READY", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "migration-ready"}}}}
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Pre: hook}
	}).Then().RevisionPhase(2, failed).RevisionReplicas(1, 1)

	// retry is refused for anything but a Failed latest revision, so it is accepted now
	// When the flag is fixed and the revision retried
	cm.Data["migration-ready"] = "yes"
	_, err = env.Kube.CoreV1().ConfigMaps(s.NS).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	res := pluginOK(t, s.NS, "rollout", "retry", "dc/web")
	assert.Contains(t, res.Stdout, "revision web-2 will be retried")

	// Then the same revision completes, and no third revision exists
	s.Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(1)
	assert.Equal(t, int64(2), s.Get().Status.LatestVersion)
	assert.Contains(t, deployerLog(t, s.NS, "web-2"), "migration ready: yes", "the retried deployer ran the hook again")

	// And retrying a Complete revision is refused
	again := plugin(t, s.NS, "rollout", "retry", "dc/web")
	assert.Equal(t, 1, again.ExitCode, "%s", again)
	assert.Contains(t, again.Stderr, "only a Failed latest revision can be retried, and web-2 is Complete")
}

// imageOf builds a test-app image name per version. On the local cluster any tag of the
// test app runs it; hack/e2e-kind.sh loads these tags too.
func imageOf(version int) string {
	if version == 1 {
		return images.TestApp
	}
	return fmt.Sprintf("%s-v%d", images.TestApp, version)
}

func TestCLIUndoRollsBackToTheImagesOfRevisionTwo(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	for v := 2; v <= 3; v++ {
		s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.Template.Spec.Containers[0].Image = imageOf(v)
		}).Then().RevisionPhase(int64(v), complete)
	}
	s.Then().ReadyPods(2)

	// When undo --dry-run runs, then it shows the image change as a diff and changes nothing
	before := s.Get()
	res := pluginOK(t, s.NS, "rollout", "undo", "dc/web", "--dry-run")
	assert.Contains(t, res.Stdout, "-      image: "+imageOf(3))
	assert.Contains(t, res.Stdout, "+      image: "+imageOf(2))
	assert.Contains(t, res.Stdout, "Dry run")
	after := s.Get()
	// The spec, not the resourceVersion: the controller may still write the status of
	// revision 3 (it gathers revision events for up to 0.5 s).
	assert.Equal(t, before.Generation, after.Generation, "a dry run writes nothing")
	assert.Equal(t, before.Spec, after.Spec, "a dry run writes nothing")

	// When undo runs, then revision 2's images are in the spec and revision 4 completes with them
	res = pluginOK(t, s.NS, "rollout", "undo", "dc/web")
	assert.Contains(t, res.Stdout, "rolled back to revision 2: revision 4 starts")
	assert.Equal(t, imageOf(2), s.Get().Spec.Template.Spec.Containers[0].Image)
	s.Then().RevisionPhase(4, complete).RevisionReplicas(3, 0).ReadyPods(2)
	rs4, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-4", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, imageOf(2), rs4.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, "2", rs4.Annotations[stagehandv1.RollbackToAnnotation])
	assert.Equal(t, int64(4), s.Get().Status.LatestVersion, "latestVersion only moves forward")

	// Then history lists every revision with its cause and images
	res = pluginOK(t, s.NS, "rollout", "history", "dc/web")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 5, "a header and four revisions:\n%s", res.Stdout)
	assert.Regexp(t, `^REVISION\s+STATUS\s+CAUSE\s+IMAGES\s+CREATED$`, lines[0])
	assert.Regexp(t, `^1\s+Complete\s+ConfigChange\s+`+imageOf(1)+`\s`, lines[1])
	assert.Regexp(t, `^3\s+Complete\s+ConfigChange\s+`+imageOf(3)+`\s`, lines[3])
	assert.Regexp(t, `^4\s+Complete\s+Rollback to 2\s+`+imageOf(2)+`\s`, lines[4])

	var entries []map[string]any
	res = pluginOK(t, s.NS, "rollout", "history", "dc/web", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &entries), res.Stdout)
	assert.Len(t, entries, 4)

	res = pluginOK(t, s.NS, "rollout", "history", "dc/web", "--revision", "2")
	assert.Contains(t, res.Stdout, "image: "+imageOf(2))
}

func TestCLIStatusExitCodeFollowsTheRollout(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created()

	// A rollout that completes: exit 0, with its phases on the way
	res := pluginOK(t, s.NS, "rollout", "status", "dc/web", "--timeout", "2m")
	assert.Contains(t, res.Stdout, "revision web-1 is complete")

	// A rollout whose pre hook fails: non-zero, with the hook's progress and the reason
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
			Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo checking the schema; exit 4"),
		}
	})
	res = plugin(t, s.NS, "rollout", "status", "dc/web", "--timeout", "2m")
	assert.Equal(t, 1, res.ExitCode, "%s", res)
	assert.Contains(t, res.Stdout, "Following revision web-2")
	assert.Contains(t, res.Stdout, "pre hook")
	assert.Contains(t, res.Stderr, "revision web-2 failed")

	// And logs show the deployer's log with the hook's output
	res = pluginOK(t, s.NS, "rollout", "logs", "dc/web")
	assert.Contains(t, res.Stdout, "checking the schema")
}

func TestCLIPauseRefusesLatestAndResumeRollsOutTheChange(t *testing.T) {
	requireController(t)
	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)

	res := pluginOK(t, s.NS, "rollout", "pause", "dc/web")
	assert.Contains(t, res.Stdout, "deploymentconfig/web paused")
	assert.True(t, s.Get().Spec.Paused)
	refused := plugin(t, s.NS, "rollout", "latest", "dc/web")
	assert.Equal(t, 1, refused.ExitCode, "%s", refused)
	assert.Contains(t, refused.Stderr, "deploymentconfig/web is paused: resume it first")

	s.When().TemplateChanged(2)
	pluginOK(t, s.NS, "rollout", "resume", "dc/web")
	s.Then().RevisionPhase(2, complete).ReadyPods(1)
}

func TestCLIErrorsAreClear(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	res := plugin(t, ns, "rollout", "history", "dc/nope")
	assert.Equal(t, 1, res.ExitCode)
	assert.Contains(t, res.Stderr, `deploymentconfig "nope" not found in namespace "`+ns+`"`)

	res = plugin(t, ns, "rollout", "latest", "deployment/web")
	assert.Equal(t, 2, res.ExitCode, "a usage mistake")
	assert.Contains(t, res.Stderr, "is not a DeploymentConfig")

	res = plugin(t, ns, "rollout", "history", "dc/web", "-o", "wide")
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, res.Stderr, "use json or yaml")
}

// The shipped user roles aggregate into edit and view: a namespace editor can run the
// rollout commands, a viewer can read the history but is refused a rollout, with the
// apiserver's reason.
func TestCLIWorksForNamespaceEditorsThroughTheShippedRoles(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	for user, role := range map[string]string{"alice": "edit", "bob": "view"} {
		_, err := env.Kube.RbacV1().RoleBindings(s.NS).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s.When().Created().Then().RevisionPhase(1, complete)

	res := pluginOK(t, s.NS, "--as", "alice", "rollout", "latest", "dc/web")
	assert.Contains(t, res.Stdout, "rollout of revision 2 requested")
	s.Then().RevisionPhase(2, complete)
	pluginOK(t, s.NS, "--as", "alice", "rollout", "status", "dc/web")

	res = pluginOK(t, s.NS, "--as", "bob", "rollout", "history", "dc/web")
	assert.Contains(t, res.Stdout, "Manual")
	res = plugin(t, s.NS, "--as", "bob", "rollout", "latest", "dc/web")
	assert.Equal(t, 1, res.ExitCode, "%s", res)
	assert.Contains(t, res.Stderr, `User "bob" cannot update resource "deploymentconfigs"`)
}
