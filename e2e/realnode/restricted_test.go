//go:build e2e && realnode

package realnode

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

// confinement prints what the kernel applies to the process that runs it: its user, its
// seccomp mode (2: a filter), its no_new_privs flag and its effective capabilities.
const confinement = `echo uid=$(id -u); grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status`

// wantConfinement is what confinement prints in a restricted container of the test app:
// user 65532, RuntimeDefault's seccomp filter, allowPrivilegeEscalation false, no
// capability.
var wantConfinement = []string{"uid=65532", "Seccomp:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000"}

// TestRealNodeRestrictedNamespaceRunsConfinedContainers rolls a Rolling DC with pre and
// post hooks in a namespace that enforces Pod Security "restricted": the deployer, hook
// and application pods are admitted, and runc starts their containers as non-root with
// the seccomp filter, no_new_privs and no capability.
func TestRealNodeRestrictedNamespaceRunsConfinedContainers(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre:  framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre-hook; "+confinement),
		Post: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo post-hook; "+confinement),
	}
	restrict(&dc.Spec.Template.Spec)
	s := env.Given(t).DeploymentConfig(dc)
	enforceRestricted(t, s.NS)
	pods := env.RecordPodHistory(t, s.NS)

	// When the DC is created in the restricted namespace, then revision 1 completes
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2).OneDeployerPodPerRevision(1)

	// Then the deployer ran the pushed image as a non-root container and exited 0
	deployers := pods.Named("web-1-deploy")
	require.Len(t, deployers, 1)
	checkRanImage(t, deployers[0], env.RealImage(t, "stagehand/deployer"))
	assert.True(t, ptr.Deref(deployers[0].Spec.SecurityContext.RunAsNonRoot, false),
		"the kubelet checked that the deployer image's user is not root")
	// and each hook's container, and each application container, ran confined
	log := logOf(t, s.NS, "web-1-deploy")
	for _, want := range wantConfinement {
		assert.Equal(t, 2, strings.Count(log, want), "%q from the pre and post hooks in kubectl logs web-1-deploy:\n%s", want, log)
	}
	checkHooksSucceeded(t, pods, "1", 2)
	app, err := env.Kube.CoreV1().Pods(s.NS).List(t.Context(), metav1.ListOptions{LabelSelector: stagehandv1.RevisionLabel + "=1," +
		"!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel})
	require.NoError(t, err)
	require.Len(t, app.Items, 2)
	for _, p := range app.Items {
		out := execIn(t, s.NS, p.Name, "app", "/bin/sh", "-c", confinement)
		for _, want := range wantConfinement {
			assert.Contains(t, out, want, "kubectl exec %s -- sh -c %q", p.Name, confinement)
		}
	}

	pods.LogAll(t)
}

// refusedContainer is the state of pod's first container when the kubelet refused to
// create it, or nil.
func refusedContainer(pod *corev1.Pod) *corev1.ContainerStateWaiting {
	if len(pod.Status.ContainerStatuses) == 0 {
		return nil
	}
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" {
		return w
	}
	return nil
}

// restrict makes a pod spec pass Pod Security "restricted": non-root, RuntimeDefault
// seccomp, no privilege escalation and no capability. Hook pods copy it.
func restrict(spec *corev1.PodSpec) {
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

// enforceRestricted labels ns for Pod Security "restricted" and waits until admission
// refuses a pod without a security context there.
func enforceRestricted(t *testing.T, ns string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		n.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
		_, err = env.Kube.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "labelling namespace %s", ns)
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"), nil
	})
	require.NoError(t, err, "Pod Security admission must refuse a pod without a security context in %s", ns)
}

// checkHooksSucceeded checks that want hook pods of revision ran a container that exited 0.
func checkHooksSucceeded(t *testing.T, pods *framework.PodHistory, revision string, want int) {
	t.Helper()
	var ran int
	for _, p := range pods.Pods() {
		if p.Labels[stagehandv1.HookStageLabel] == "" || p.Labels[stagehandv1.RevisionLabel] != revision {
			continue
		}
		require.NotEmpty(t, p.Status.ContainerStatuses, "hook pod %s", p.Name)
		term := p.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, "hook pod %s: %+v", p.Name, p.Status.ContainerStatuses[0].State)
		assert.Zero(t, term.ExitCode, "hook pod %s", p.Name)
		assert.NotEmpty(t, term.ContainerID, "hook pod %s", p.Name)
		ran++
	}
	assert.Equal(t, want, ran, "hook pods of revision %s", revision)
}

// execIn runs command in a container of a running pod (kubectl exec) and returns its
// stdout; the test fails when it cannot run or exits non-zero.
func execIn(t *testing.T, ns, pod, container string, command ...string) string {
	t.Helper()
	out, errOut, err := env.Exec(t, ns, pod, container, command...)
	require.NoError(t, err, "exec %v in %s/%s: %s", command, ns, pod, errOut)
	return out
}
