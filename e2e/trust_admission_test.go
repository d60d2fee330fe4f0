//go:build e2e

package e2e

// What Stagehand trusts, only those who may do the same thing themselves can write
// (docs/security.md): a HookAction's command needs pods/exec, and a revision's config
// snapshot is the controller's alone.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const revisionSnapshotPolicy = "stagehand-revision-snapshot"

// grantRole gives user a namespaced Role with rules.
func grantRole(t *testing.T, ns, user, role string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// pastRBAC repeats a request while RBAC forbids it, until a new RoleBinding has reached
// the authorizer, and returns its last error: a policy's refusal ends the wait (RBAC let
// the request through to admission).
func pastRBAC(request func() error) error {
	return retryForbidden(request, func(err error) bool { return !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") })
}

// untilAllowed repeats a request while it is Forbidden, by RBAC or by a policy whose
// authorizer check has not seen a new RoleBinding yet, and returns its last error.
func untilAllowed(request func() error) error {
	return retryForbidden(request, func(error) bool { return true })
}

func retryForbidden(request func() error, again func(error) bool) error {
	deadline := time.Now().Add(rbacPropagationTimeout)
	for {
		err := request()
		if err == nil || !apierrors.IsForbidden(err) || !again(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func shellAction(name, script string) *stagehandv1.HookAction {
	return &stagehandv1.HookAction{ObjectMeta: metav1.ObjectMeta{Name: name},
		Action: stagehandv1.Action{Exec: &stagehandv1.ExecAction{Command: []string{"/bin/sh", "-c", script}}}}
}

// A user bound only to stagehand-edit may not write the command that other people's
// ExecutionHooks run inside containers: creating a HookAction, or changing its action,
// needs create pods/exec, like the ExecutionHook itself.
func TestHookActionCommandNeedsPodsExec(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	bindClusterRole(t, ns, "erin", stagehandEditClusterRole)
	_, erin := impersonating(t, "erin")
	actions := erin.StagehandV1alpha1().HookActions(ns)
	waitForPolicy(t, runCodePolicy, func() error {
		_, err := actions.Create(ctx, shellAction("probe", "true"), dryRun)
		return err
	})

	// Creating an action is refused, naming the action and the permission
	_, err := actions.Create(ctx, shellAction("mine", "id"), metav1.CreateOptions{})
	msg := deniedBy(t, runCodePolicy, err)
	assert.Contains(t, msg, "HookAction mine (its action) runs commands inside running containers")
	assert.Contains(t, msg, "you need create on pods/exec in namespace "+ns)

	// Given the namespace's usual action, written by an admin
	_, err = env.Stagehand.StagehandV1alpha1().HookActions(ns).Create(ctx, shellAction("quiesce", "sync"), metav1.CreateOptions{})
	require.NoError(t, err)
	update := func(change func(*stagehandv1.HookAction)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			a, err := actions.Get(ctx, "quiesce", metav1.GetOptions{})
			require.NoError(t, err)
			change(a)
			_, err = actions.Update(ctx, a, metav1.UpdateOptions{})
			return err
		})
	}
	// The editor may not rewrite its command: the attack of issue 22
	err = update(func(a *stagehandv1.HookAction) {
		a.Action.Exec.Command = []string{"/bin/sh", "-c", "cat /var/run/secrets/*; id"}
	})
	assert.Contains(t, deniedBy(t, runCodePolicy, err), "HookAction quiesce (its action)")
	// But may change what runs no code: labels and the timeout
	assert.NoError(t, update(func(a *stagehandv1.HookAction) { a.Labels = map[string]string{"team": "db"} }))
	assert.NoError(t, update(func(a *stagehandv1.HookAction) { a.ActionTimeoutSeconds = ptr.To[int64](42) }))
	live, err := env.Stagehand.StagehandV1alpha1().HookActions(ns).Get(ctx, "quiesce", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/sh", "-c", "sync"}, live.Action.Exec.Command, "the command is the admin's")

	// A deployer may create an action only as a revision's exec hook (checked on the DC)
	deployer := "system:serviceaccount:" + ns + ":" + stagehandv1.DeployerServiceAccountName
	_, asDeployer := impersonating(t, deployer)
	grantRole(t, ns, deployer, "actions", rbacv1.PolicyRule{APIGroups: []string{stagehandv1.GroupName},
		Resources: []string{"hookactions"}, Verbs: []string{"create"}})
	err = pastRBAC(func() error {
		_, err := asDeployer.StagehandV1alpha1().HookActions(ns).Create(ctx, shellAction("own", "id"), dryRun)
		return err
	})
	deniedBy(t, runCodePolicy, err)
	ofRevision := shellAction("web-1-hook-pre", "id")
	ofRevision.Labels = map[string]string{stagehandv1.ExecHookOfLabel: "web-1"}
	_, err = asDeployer.StagehandV1alpha1().HookActions(ns).Create(ctx, ofRevision, dryRun)
	assert.NoError(t, err, "the deployer creates a revision's exec hook action")

	// With create pods/exec, the same user may do both
	grantRole(t, ns, "erin", "exec", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}})
	assert.NoError(t, untilAllowed(func() error {
		_, err := actions.Create(ctx, shellAction("mine", "id"), metav1.CreateOptions{})
		return err
	}))
	assert.NoError(t, update(func(a *stagehandv1.HookAction) { a.Action.Exec.Command = []string{"/bin/sh", "-c", "sync; sync"} }))
}

// A user who may update ReplicaSets but not exec cannot forge a revision's snapshot, which
// the deployer and the exec-hook check trust: neither by editing a revision nor by creating
// a ReplicaSet that carries one. Their other edits of ReplicaSets still pass, and the
// controller still writes revisions.
func TestForgedSnapshotIsRefused(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete)
	bindClusterRole(t, s.NS, "mallory", stagehandEditClusterRole)
	grantRole(t, s.NS, "mallory", "replicasets", rbacv1.PolicyRule{APIGroups: []string{"apps"},
		Resources: []string{"replicasets"}, Verbs: []string{"get", "list", "create", "update", "patch"}})
	mallory, _ := impersonating(t, "mallory")
	rss := mallory.AppsV1().ReplicaSets(s.NS)
	forge := func(request func() error) string {
		t.Helper()
		var err error
		waitForPolicy(t, revisionSnapshotPolicy, func() error { err = pastRBAC(request); return err })
		return deniedBy(t, revisionSnapshotPolicy, err)
	}
	edit := func(change func(*appsv1.ReplicaSet)) func() error {
		return func() error {
			rs, err := rss.Get(ctx, "web-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(rs)
			_, err = rss.Update(ctx, rs, metav1.UpdateOptions{})
			return err
		}
	}

	// Rewriting the snapshot: refused, with what to do instead
	msg := forge(edit(func(rs *appsv1.ReplicaSet) {
		rs.Annotations[stagehandv1.ConfigSnapshotAnnotation] = strings.Replace(
			rs.Annotations[stagehandv1.ConfigSnapshotAnnotation], `"replicas":1`, `"replicas":2`, 1)
	}))
	assert.Contains(t, msg, "changing the annotation stagehand.dev/config-snapshot of ReplicaSet web-1")
	assert.Contains(t, msg, "change the DeploymentConfig instead")
	// Removing it: refused too
	_, err := rss.Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	deniedBy(t, revisionSnapshotPolicy, edit(func(rs *appsv1.ReplicaSet) {
		delete(rs.Annotations, stagehandv1.ConfigSnapshotAnnotation)
	})())
	// Creating a revision-shaped ReplicaSet with a snapshot of one's own: refused
	live, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	fake := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-9", Labels: live.Labels, Annotations: map[string]string{
			stagehandv1.ConfigSnapshotAnnotation: live.Annotations[stagehandv1.ConfigSnapshotAnnotation]}},
		Spec: *live.Spec.DeepCopy(),
	}
	fake.Spec.Replicas = ptr.To[int32](0)
	_, err = rss.Create(ctx, fake, metav1.CreateOptions{})
	assert.Contains(t, deniedBy(t, revisionSnapshotPolicy, err), "creating a ReplicaSet with the annotation")
	// A cluster admin is held to the same rule: the snapshot is the controller's record
	_, err = env.Kube.AppsV1().ReplicaSets(s.NS).Create(ctx, fake, dryRun)
	deniedBy(t, revisionSnapshotPolicy, err)

	// Other edits pass: a label, and a ReplicaSet without a snapshot
	assert.NoError(t, edit(func(rs *appsv1.ReplicaSet) { rs.Labels["team"] = "web" })())
	delete(fake.Annotations, stagehandv1.ConfigSnapshotAnnotation)
	fake.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: images.TestApp}}
	_, err = rss.Create(ctx, fake, dryRun)
	assert.NoError(t, err)

	// And the controller still writes revisions: the next one rolls out
	s.When().TemplateChanged(2).Then().RevisionPhase(2, stagehandv1.RevisionPhaseComplete)
	rs2, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, rs2.Annotations[stagehandv1.ConfigSnapshotAnnotation])
}
