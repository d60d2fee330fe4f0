//go:build e2e && realnode

package realnode

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// The exec hooks of these tests run through the apiserver's pods/exec, which the real
// node's kubelet serves with containerd's CRI streaming server: the command runs in the
// app container's namespaces (its PID 1 is the test app), as runc's exec of it.

// postExecHook is a post hook that runs script with /bin/sh in the new revision's app
// containers, within timeout seconds.
func postExecHook(policy stagehandv1.LifecycleHookFailurePolicy, timeout int64, script string) *stagehandv1.LifecycleHook {
	return &stagehandv1.LifecycleHook{FailurePolicy: policy, Exec: &stagehandv1.ExecHook{
		ContainerName: "app", Pods: stagehandv1.ExecHookPodsNew, TimeoutSeconds: ptr.To(timeout),
		Command: []string{"/bin/sh", "-c", script}}}
}

// executionHook reads the ExecutionHook name.
func executionHook(t *testing.T, ns, name string) *stagehandv1.ExecutionHook {
	t.Helper()
	h, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err, "reading ExecutionHook %s/%s", ns, name)
	return h
}

// TestRealNodeExecHookRunsInTheAppContainer rolls a DC of two pods whose post hook is an
// exec hook: it runs once in each app container, as the container's user and beside its
// PID 1 (the test app), and its output is recorded in the ExecutionHook's status and the
// deployer's log.
func TestRealNodeExecHookRunsInTheAppContainer(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Post: postExecHook(stagehandv1.LifecycleHookFailurePolicyAbort, 30,
			`echo "post in $(hostname) as $(id -u), pid 1 is $(tr '\0' '\n' < /proc/1/cmdline | head -n 1)"`),
	}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)

	// When the DC rolls out
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	// Then the hook ran once in each app container, inside it
	h := executionHook(t, s.NS, "web-1-hook-post")
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status)
	require.Len(t, h.Status.HookStatuses, 2)
	assert.Equal(t, "2/2", h.Status.Summary)
	log := logOf(t, s.NS, stagehandv1.DeployerPodName("web-1"))
	for _, e := range h.Status.HookStatuses {
		want := fmt.Sprintf("post in %s as 65532, pid 1 is /usr/local/bin/testapp", e.PodName)
		assert.Equal(t, ptr.To(true), e.Succeed, "%s: %+v", e.PodName, e.Error)
		assert.Equal(t, int32(1), e.Attempts, e.PodName)
		assert.Equal(t, ptr.To[int32](0), e.ExitCode, e.PodName)
		assert.Equal(t, want, strings.TrimSpace(e.Output), "the output recorded for %s", e.PodName)
		assert.Contains(t, log, "exec hook web-1-hook-post: "+e.PodName+"/app | "+want, "the deployer's log")
		checkRunning(t, s.NS, e.PodName)
	}
	pods.LogAll(t)
}

// TestRealNodeExecHookTimeoutStopsTheProcess rolls a DC whose post exec hook writes its
// PID and then sleeps far beyond its 3 s timeout. The hook ends Timeout with the PID it
// stopped, the rollout goes on (Ignore), and an exec into the app container afterwards
// finds that PID gone and no sleep left: the second exec that the timeout sends killed
// the real process, not only the stream.
func TestRealNodeExecHookTimeoutStopsTheProcess(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Post: postExecHook(stagehandv1.LifecycleHookFailurePolicyIgnore, 3,
			`echo $$ > /tmp/hook.pid; echo "hook $$ sleeping"; sleep 600`),
	}
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)

	// When the DC rolls out
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// Then the hook timed out, and says which process it stopped
	h := executionHook(t, s.NS, "web-1-hook-post")
	require.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase, "%+v", h.Status)
	require.Len(t, h.Status.HookStatuses, 1)
	e := h.Status.HookStatuses[0]
	require.NotNil(t, e.Error, "%+v", e)
	assert.Equal(t, stagehandv1.HookErrorTimeout, e.Error.ErrorType)
	assert.Equal(t, "DeadlineExceeded", e.Error.Reason)
	m := regexp.MustCompile(`the command \(PID (\d+)\) was stopped$`).FindStringSubmatch(e.Error.Message)
	require.NotNil(t, m, "the timeout's message: %q", e.Error.Message)
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.Contains(t, e.Output, fmt.Sprintf("hook %d sleeping", pid), "the command ran, and its $$ is the PID stopped")
	assert.Contains(t, logOf(t, s.NS, stagehandv1.DeployerPodName("web-1")),
		fmt.Sprintf("exec hook web-1-hook-post: %s/app failed (Timeout: actionTimeoutSeconds passed; the command (PID %d) was stopped)", e.PodName, pid))

	// And the process is gone from the container, which still runs
	checkRunning(t, s.NS, e.PodName)
	out, code := execInApp(t, s.NS, e.PodName, "cat", "/tmp/hook.pid")
	require.Zero(t, code, "the hook wrote its PID: %s", out)
	require.Equal(t, strconv.Itoa(pid), strings.TrimSpace(out), "the PID the hook wrote is the PID the timeout stopped")
	out, code = execInApp(t, s.NS, e.PodName, "kill", "-0", strconv.Itoa(pid))
	assert.NotZero(t, code, "kill -0 %d: the hook's process still runs in the container: %s", pid, out)
	ps, code := execInApp(t, s.NS, e.PodName, "ps", "-o", "pid,ppid,args")
	require.Zero(t, code, ps)
	t.Logf("processes in %s/app after the timeout:\n%s", e.PodName, ps)
	assert.NotContains(t, ps, "sleep 600", "the hook's sleep still runs in the container")
	pods.LogAll(t)
}

// checkRunning asserts that pod's app container runs on the real node, never restarted.
func checkRunning(t *testing.T, ns, pod string) {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	require.NoError(t, err)
	framework.LogContainers(t, p)
	require.Len(t, p.Status.ContainerStatuses, 1, pod)
	st := p.Status.ContainerStatuses[0]
	assert.NotNil(t, st.State.Running, "pod %s: %+v", pod, st.State)
	assert.Zero(t, st.RestartCount, "pod %s", pod)
}

// execInApp runs command in pod's app container (kubectl exec), and returns its stdout,
// then its stderr, and its exit code.
func execInApp(t *testing.T, ns, pod string, command ...string) (string, int) {
	t.Helper()
	stdout, stderr, err := env.Exec(t, ns, pod, "app", command...)
	out := stdout + stderr
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return out, exit.ExitStatus()
	}
	require.NoError(t, err, "exec %v in %s/%s: %s", command, ns, pod, out)
	return out, 0
}
