//go:build e2e

package e2e

// The shipped admission policies (deploy/policies/, docs/security.md) on the real
// apiserver: a user who may not create pods cannot make Stagehand run code for them, and
// the controller's own identity can write only the shapes it needs.

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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	runCodePolicy              = "stagehand-run-code"
	controllerPodsPolicy       = "stagehand-controller-pods"
	controllerBindingsPolicy   = "stagehand-controller-rolebindings"
	controllerAccountsPolicy   = "stagehand-controller-serviceaccounts"
	controllerRevisionsPolicy  = "stagehand-controller-replicasets"
	controllerServiceAccount   = "stagehand-controller"
	policyActivationTimeout    = 30 * time.Second
	rbacPropagationTimeout     = 10 * time.Second
	stagehandEditClusterRole   = "stagehand-edit"
	deployerPodForRevisionName = "web-1"
)

var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// impersonating returns the suite's clients acting as user (groups are added by the
// apiserver: system:authenticated, and a ServiceAccount's groups for one).
func impersonating(t *testing.T, user string) (kubernetes.Interface, stagehandclient.Interface) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	sh, err := stagehandclient.NewForConfig(cfg)
	require.NoError(t, err)
	return kube, sh
}

// waitForPolicy repeats probe, a request the policy refuses, until the policy does: the
// apiserver loads a policy a moment after the suite installs it.
func waitForPolicy(t *testing.T, policy string, probe func() error) {
	t.Helper()
	deadline := time.Now().Add(policyActivationTimeout)
	for {
		err := probe()
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'") {
			return
		}
		require.True(t, time.Now().Before(deadline), "policy %s did not refuse its probe within %s; the last answer: %v", policy, policyActivationTimeout, err)
		time.Sleep(250 * time.Millisecond)
	}
}

// deniedBy asserts that policy refused a request with a Forbidden error, and returns the
// error's text.
func deniedBy(t *testing.T, policy string, err error) string {
	t.Helper()
	require.Error(t, err, "policy %s let the request through", policy)
	assert.True(t, apierrors.IsForbidden(err), "want 403 Forbidden, got %v", err)
	assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy '"+policy+"'")
	return err.Error()
}

func bindClusterRole(t *testing.T, ns, user, clusterRole string) {
	t.Helper()
	_, err := env.Kube.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// manualDC is a DeploymentConfig without triggers: nothing rolls out on its own, so the
// tests look at admission only.
func manualDC(name string, strategy stagehandv1.DeploymentStrategyType) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig(name, 1, strategy)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{}
	return dc
}

// codeCarryingDCs are DeploymentConfigs that ask Stagehand to run code, each with the path
// the policy must name.
func codeCarryingDCs() map[string]*stagehandv1.DeploymentConfig {
	custom := manualDC("custom", stagehandv1.DeploymentStrategyTypeCustom)
	custom.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{Image: framework.ExampleStrategyImage()}

	command := manualDC("command", stagehandv1.DeploymentStrategyTypeRolling)
	command.Spec.Strategy.CustomParams = &stagehandv1.CustomDeploymentStrategyParams{
		Command: []string{"/bin/sh", "-c", "echo before; stagehand-deployer"},
	}

	pre := manualDC("pre-hook", stagehandv1.DeploymentStrategyTypeRolling)
	pre.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating"),
	}

	mid := recreateWithHooks("mid-hook", 1, nil, framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating"), nil)
	mid.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{}

	step := manualDC("step-hook", stagehandv1.DeploymentStrategyTypeRolling)
	step.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Steps: []stagehandv1.RollingStep{{Hook: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo verifying")}},
	}

	failed := manualDC("failed-hook", stagehandv1.DeploymentStrategyTypeRecreate)
	failed.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{
		Failed: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "echo undoing"),
	}

	return map[string]*stagehandv1.DeploymentConfig{
		"spec.strategy.rollingParams.steps[].hook.execNewPod": step,
		"spec.strategy.recreateParams.failed.execNewPod":      failed,
		"spec.strategy.type: Custom":                          custom,
		"spec.strategy.customParams.command":                  command,
		"spec.strategy.rollingParams.pre.execNewPod":          pre,
		"spec.strategy.recreateParams.mid.execNewPod":         mid,
	}
}

// A user with stagehand-edit only may not add code that Stagehand runs in a pod, and the
// refusal names the field and the missing permission. The same user may still edit what
// does not run code, and may do everything once allowed to create pods.
func TestSecurityRunningCodeNeedsCreatePods(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	bindClusterRole(t, ns, "dana", stagehandEditClusterRole)
	_, dana := impersonating(t, "dana")
	dcs := dana.StagehandV1alpha1().DeploymentConfigs(ns)
	waitForPolicy(t, runCodePolicy, func() error {
		_, err := dcs.Create(ctx, codeCarryingDCs()["spec.strategy.rollingParams.pre.execNewPod"], dryRun)
		return err
	})

	// Creating each kind of code is refused, naming the field and the permission
	for path, dc := range codeCarryingDCs() {
		_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
		msg := deniedBy(t, runCodePolicy, err)
		assert.Contains(t, msg, path)
		assert.Contains(t, msg, "code in a pod: you need create pods in namespace "+ns)
	}

	// Given a DC with a pre hook, created by an admin
	hooked := manualDC("hooked", stagehandv1.DeploymentStrategyTypeRolling)
	hooked.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating"),
	}
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, hooked, metav1.CreateOptions{})
	require.NoError(t, err)
	// update retries on a conflict: the controller writes the DC's status meanwhile.
	update := func(change func(*stagehandv1.DeploymentConfig)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			dc, err := dcs.Get(ctx, "hooked", metav1.GetOptions{})
			require.NoError(t, err)
			change(dc)
			_, err = dcs.Update(ctx, dc, metav1.UpdateOptions{})
			return err
		})
	}

	// The editor may change what runs no code: replicas, the template, the hook's policy
	assert.NoError(t, update(func(dc *stagehandv1.DeploymentConfig) { dc.Spec.Replicas = ptr.To[int32](3) }))
	assert.NoError(t, update(func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2) }))
	assert.NoError(t, update(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Pre.FailurePolicy = stagehandv1.LifecycleHookFailurePolicyIgnore
	}))
	// But not the hook's command, nor add a post hook
	err = update(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Pre.ExecNewPod.Command = []string{"/bin/sh", "-c", "echo something else"}
	})
	assert.Contains(t, deniedBy(t, runCodePolicy, err), "spec.strategy.rollingParams.pre.execNewPod runs code in a pod")
	err = update(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Post = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "echo done")
	})
	assert.Contains(t, deniedBy(t, runCodePolicy, err), "spec.strategy.rollingParams.post.execNewPod runs code in a pod")
	// Removing a hook runs less code: allowed
	assert.NoError(t, update(func(dc *stagehandv1.DeploymentConfig) { dc.Spec.Strategy.RollingParams.Pre = nil }))

	// When the user may also create pods, every one of those DCs is accepted
	grantRole(t, ns, "dana", "pod-creator", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}})
	for path, dc := range codeCarryingDCs() {
		assert.NoError(t, untilAllowed(func() error {
			_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
			return err
		}), "a user who may create pods may set %s", path)
	}
	assert.NoError(t, update(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Strategy.RollingParams.Post = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "echo done")
	}))
}

// The controller's identity can create the deployer pod, the deployer's RoleBinding and
// ServiceAccount as Stagehand makes them, and nothing else of those kinds.
func TestSecurityControllerIdentityWritesOnlyWhatStagehandNeeds(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	_, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: stagehandv1.DeployerServiceAccountName},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	controller, _ := impersonating(t, "system:serviceaccount:"+framework.ControllerNamespace+":"+controllerServiceAccount)
	waitForPolicy(t, controllerAccountsPolicy, func() error {
		_, err := controller.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return err
	})

	t.Run("pods", func(t *testing.T) {
		pods := controller.CoreV1().Pods(ns)
		_, err := pods.Create(ctx, deployerPodShape(), dryRun)
		assert.NoError(t, err, "the deployer pod as the controller makes it")

		denied := []struct {
			name, message string
			change        func(*corev1.Pod)
		}{
			{"another service account", `which run as the ServiceAccount stagehand-deployer, not "default"`,
				func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }},
			{"no deployer label", "labels stagehand.dev/config and stagehand.dev/deployer-pod-for",
				func(p *corev1.Pod) { delete(p.Labels, stagehandv1.DeployerPodForLabel) }},
			{"another name", "the name <revision>-deploy",
				func(p *corev1.Pod) { p.Name = "kube-proxy-debug" }},
			{"a hostPath volume", "hostPath volumes",
				func(p *corev1.Pod) {
					p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
				}},
			{"a privileged container", "privileged containers",
				func(p *corev1.Pod) {
					p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				}},
			{"host network", "host namespaces",
				func(p *corev1.Pod) { p.Spec.HostNetwork = true }},
		}
		for _, c := range denied {
			pod := deployerPodShape()
			c.change(pod)
			_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), c.message, c.name)
		}

		// Nor delete a pod that is not a revision's deployer or hook pod
		bystander, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "bystander"},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "stagehand.dev/never"}}, // never runs
				Containers:      []corev1.Container{{Name: "app", Image: images.Shell}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		err = pods.Delete(ctx, bystander.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), "may delete only the deployer and hook pods")
	})

	t.Run("rolebindings", func(t *testing.T) {
		bindings := controller.RbacV1().RoleBindings(ns)
		_, err := bindings.Create(ctx, deployerBinding(ns), dryRun)
		assert.NoError(t, err, "the deployer's RoleBinding as the controller makes it")

		// admin: RBAC's escalation check refuses it before admission
		toAdmin := deployerBinding(ns)
		toAdmin.RoleRef.Name = "admin"
		_, err = bindings.Create(ctx, toAdmin, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "binding admin: want Forbidden, got %v", err)

		// Its own ClusterRole passes RBAC (it holds every permission of it): the policy refuses
		toOwn := deployerBinding(ns)
		toOwn.RoleRef.Name = controllerServiceAccount
		_, err = bindings.Create(ctx, toOwn, metav1.CreateOptions{})
		assert.Contains(t, deniedBy(t, controllerBindingsPolicy, err),
			"may bind only the ClusterRole stagehand-deployer, not the ClusterRole stagehand-controller")

		for name, subject := range map[string]rbacv1.Subject{
			"a user":                            {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"},
			"another ServiceAccount":            {Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns},
			"the deployer of another namespace": {Kind: rbacv1.ServiceAccountKind, Name: stagehandv1.DeployerServiceAccountName, Namespace: "default"},
		} {
			b := deployerBinding(ns)
			b.Name = "other"
			b.Subjects = []rbacv1.Subject{subject}
			_, err := bindings.Create(ctx, b, metav1.CreateOptions{})
			assert.Contains(t, deniedBy(t, controllerBindingsPolicy, err),
				"only to the ServiceAccount stagehand-deployer of the same namespace", name)
		}
	})

	t.Run("serviceaccounts and replicasets", func(t *testing.T) {
		_, err := controller.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
		assert.Contains(t, deniedBy(t, controllerAccountsPolicy, err), "may create only the ServiceAccount stagehand-deployer")

		rs := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling).Spec.Template
		_, err = controller.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "not-a-revision"},
			Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: rs.Labels},
				Template: rs,
			},
		}, metav1.CreateOptions{})
		assert.Contains(t, deniedBy(t, controllerRevisionsPolicy, err), "may write only revisions")
	})
}

// Every shipped policy is installed with its binding, and the apiserver type-checked its
// expressions against the schemas without a warning.
func TestSecurityPoliciesAreInstalledAndTypeCheck(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	vaps := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	for _, name := range []string{runCodePolicy, controllerPodsPolicy, controllerBindingsPolicy, controllerAccountsPolicy, controllerRevisionsPolicy, revisionSnapshotPolicy} {
		_, err := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err, "the binding of %s", name)
		deadline := time.Now().Add(policyActivationTimeout)
		for {
			vap, err := vaps.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			if vap.Status.ObservedGeneration == vap.Generation {
				if vap.Status.TypeChecking != nil {
					assert.Empty(t, vap.Status.TypeChecking.ExpressionWarnings, "policy %s", name)
				}
				break
			}
			require.True(t, time.Now().Before(deadline), "policy %s was not type-checked within %s", name, policyActivationTimeout)
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// deployerPodShape is revision web-1's deployer pod in the shape of the deployer-pod
// contract (DESIGN.md §5): what the controller creates.
func deployerPodShape() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: stagehandv1.DeployerPodName(deployerPodForRevisionName),
			Labels: map[string]string{
				stagehandv1.ConfigLabel:         "web",
				stagehandv1.RevisionLabel:       "1",
				stagehandv1.DeployerPodForLabel: deployerPodForRevisionName,
			},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: stagehandv1.DeployerServiceAccountName,
			RestartPolicy:      corev1.RestartPolicyNever,
			Containers:         []corev1.Container{{Name: stagehandv1.DeployerContainerName, Image: "stagehand/deployer:" + strings.TrimPrefix(images.TestApp, "stagehand/testapp:")}},
		},
	}
}

// deployerBinding is the RoleBinding the controller makes in each namespace.
func deployerBinding(ns string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: stagehandv1.DeployerServiceAccountName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: stagehandv1.DeployerClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: stagehandv1.DeployerServiceAccountName, Namespace: ns}},
	}
}
