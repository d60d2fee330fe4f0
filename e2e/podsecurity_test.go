//go:build e2e

package e2e

// Pod Security: a DeploymentConfig rolls out, hooks included, in a namespace that enforces
// the "restricted" standard. The deployer pod passes it whatever the template says
// (DESIGN.md §5); the application and hook pods pass it because the template does (hook
// pods inherit the template's security contexts).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// enforceRestricted labels the namespace so that Pod Security admission enforces the
// "restricted" standard, and checks that it does: a pod without a security context is
// refused.
func enforceRestricted(t *testing.T, ns string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		n.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
		_, err = env.Kube.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "labelling namespace %s for Pod Security restricted", ns)

	// Pod Security admission reads namespaces from an informer: wait until it has seen the label.
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"), nil
	})
	require.NoError(t, err, "Pod Security admission must refuse a pod without a security context in %s", ns)
}

// restrictTemplate makes a pod template pass "restricted": non-root, RuntimeDefault
// seccomp, no privilege escalation, no capabilities.
func restrictTemplate(spec *corev1.PodSpec) {
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range spec.Containers {
		spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

func TestPodSecurityRestrictedNamespaceRollsOutWithHooks(t *testing.T) {
	requireController(t)
	dc := recreateWithHooks("web", 2,
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook under restricted"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo mid-hook under restricted"),
		framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook under restricted"))
	restrictTemplate(&dc.Spec.Template.Spec)
	s := env.Given(t).DeploymentConfig(dc)
	enforceRestricted(t, s.NS)
	hooks := env.WatchHooks(t, s.NS, "web")

	// When the DeploymentConfig is created in the restricted namespace, then its deployer
	// pod, its three hook pods and its application pods are admitted and the rollout completes.
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2).OneDeployerPodPerRevision(1)
	assert.Equal(t, []string{"pre", "mid", "post"}, hooks.Stages(), "each hook runs once, in order")
	log := deployerLog(t, s.NS, "web-1")
	for _, line := range []string{"pre-hook under restricted", "mid-hook under restricted", "post-hook under restricted"} {
		assert.Contains(t, log, line)
	}
}
