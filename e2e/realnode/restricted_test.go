//go:build e2e && realnode

package realnode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	framework.RestrictTemplate(&dc.Spec.Template.Spec)
	s := env.Given(t).DeploymentConfig(dc)
	env.EnforceRestricted(t, s.NS)
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

// execIn runs command in a container of a running pod (kubectl exec) and returns its
// stdout; the test fails when it cannot run or exits non-zero.
func execIn(t *testing.T, ns, pod, container string, command ...string) string {
	t.Helper()
	out, errOut, err := env.Exec(t, ns, pod, container, command...)
	require.NoError(t, err, "exec %v in %s/%s: %s", command, ns, pod, errOut)
	return out
}
