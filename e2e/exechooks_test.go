//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

const hookTimeout = 2 * time.Minute

// execPods creates n pods of two containers (a and b), each a host process that sleeps,
// with CTR naming the container, and waits until every container runs.
func execPods(t *testing.T, ns, app string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		ctr := func(name string) corev1.Container {
			return corev1.Container{Name: name, Image: "example.com/exec-target:1", Command: []string{"sleep", "3600"},
				Env: []corev1.EnvVar{{Name: "CTR", Value: name}}}
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("a"), ctr("b")}, TerminationGracePeriodSeconds: ptr.To[int64](1)},
		}
		_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	env.WaitForPods(t, ns, "app="+app, time.Minute, "every container running", func(pods []*corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil {
					running++
				}
			}
		}
		return running == 2*n
	})
}

func hookAction(t *testing.T, ns, name string, timeoutSeconds int64, script string) {
	t.Helper()
	a := &stagehandv1.HookAction{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Action:               stagehandv1.Action{Exec: &stagehandv1.ExecAction{Command: []string{"sh", "-c", script}}},
		ActionTimeoutSeconds: &timeoutSeconds,
	}
	_, err := env.Stagehand.StagehandV1alpha1().HookActions(ns).Create(context.Background(), a, metav1.CreateOptions{})
	require.NoError(t, err)
}

func selectorHook(name, action, app string, containers ...string) *stagehandv1.ExecutionHook {
	return &stagehandv1.ExecutionHook{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: stagehandv1.ExecutionHookSpec{ActionName: action, PodSelection: stagehandv1.PodSelection{
			PodContainerSelector: &stagehandv1.PodContainerSelector{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, ContainerList: containers},
		}},
	}
}

// waitHook waits until the hook satisfies cond, and returns it.
func waitHook(t *testing.T, ns, name, what string, cond func(*stagehandv1.ExecutionHook) bool) *stagehandv1.ExecutionHook {
	t.Helper()
	deadline := time.Now().Add(hookTimeout)
	var last *stagehandv1.ExecutionHook
	for time.Now().Before(deadline) {
		h, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = h
			if cond(h) {
				return h
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ExecutionHook %s/%s: %s not reached within %s; last seen: %+v\n%s", ns, name, what, hookTimeout, last, env.ControllerLogs())
	return nil
}

func finished(h *stagehandv1.ExecutionHook) bool { return h.Status.Phase.IsTerminal() }

// nanos parses the "<start> <end>" nanosecond pair a command printed last.
func nanos(t *testing.T, output string) (int64, int64) {
	t.Helper()
	f := strings.Fields(podstatus.LastLine(output))
	require.Len(t, f, 2, "output %q", output)
	s, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err)
	e, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	return s, e
}

// A hook over 3 pods × 2 containers runs its 6 commands at once: every command was
// running while every other one was (their intervals overlap), and each container has an
// entry with its timestamp, outcome, attempts and output.
func TestExecutionHookRunsEveryContainerAtOnce(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 3)
	hookAction(t, ns, "stamp", 60, `s=$(date +%s%N); sleep 2; echo "ran in $CTR"; echo "$s $(date +%s%N)"`)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), selectorHook("stamp", "stamp", "web"), metav1.CreateOptions{})
	require.NoError(t, err)

	h := waitHook(t, ns, "stamp", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status)
	require.Len(t, h.Status.HookStatuses, 6)
	assert.Equal(t, "6/6", h.Status.Summary)
	var latestStart, earliestEnd int64
	for _, s := range h.Status.HookStatuses {
		assert.NotNil(t, s.Timestamp, "%s/%s", s.PodName, s.ContainerName)
		assert.Equal(t, ptr.To(true), s.Succeed, "%s/%s", s.PodName, s.ContainerName)
		assert.Equal(t, int32(1), s.Attempts, "%s/%s", s.PodName, s.ContainerName)
		assert.Equal(t, ptr.To[int32](0), s.ExitCode)
		assert.Contains(t, s.Output, "ran in "+s.ContainerName, "the output tail of %s/%s", s.PodName, s.ContainerName)
		start, end := nanos(t, s.Output)
		if latestStart == 0 || start > latestStart {
			latestStart = start
		}
		if earliestEnd == 0 || end < earliestEnd {
			earliestEnd = end
		}
	}
	assert.Less(t, latestStart, earliestEnd, "the last command started before the first one ended: all 6 ran at once")
	cond := findCondition(h.Status.Conditions, stagehandv1.ExecutionHookConditionComplete)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)

	out, err := env.Kubectl(ns, "wait", "--for=condition=Complete", "executionhook/stamp", "--timeout=10s")
	assert.NoError(t, err, out)
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// A command that fails twice and then succeeds (a counter in the pod's folder) ends
// with 3 attempts, the second wait longer than the first; a command that always fails
// ends Error once actionTimeoutSeconds has passed, with its last output and a Warning event.
func TestExecutionHookRetriesWithBackoffThenGivesUp(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 1)
	hookAction(t, ns, "third-time", 120, `date +%s%N >> times-$CTR; n=$(wc -l < times-$CTR); cat times-$CTR; echo "attempt $n"; [ "$n" -ge 3 ]`)
	hookAction(t, ns, "never", 4, `echo "failing in $CTR"; exit 3`)
	hooks := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns)
	_, err := hooks.Create(context.Background(), selectorHook("third-time", "third-time", "web", "a"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hooks.Create(context.Background(), selectorHook("never", "never", "web", "b"), metav1.CreateOptions{})
	require.NoError(t, err)

	h := waitHook(t, ns, "third-time", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status)
	s := h.Status.HookStatuses[0]
	assert.Equal(t, int32(3), s.Attempts)
	var times []int64
	for _, line := range strings.Split(s.Output, "\n") {
		if v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
			times = append(times, v)
		}
	}
	require.Len(t, times, 3, "the attempts' start times in %q", s.Output)
	first, second := times[1]-times[0], times[2]-times[1]
	t.Logf("gaps between attempts: %s, %s", time.Duration(first), time.Duration(second))
	assert.Greater(t, second, first, "the back-off grows between attempts")

	h = waitHook(t, ns, "never", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase)
	s = h.Status.HookStatuses[0]
	assert.Equal(t, ptr.To(false), s.Succeed)
	require.NotNil(t, s.Error)
	assert.Equal(t, stagehandv1.HookErrorError, s.Error.ErrorType)
	assert.Contains(t, s.Error.Message, "actionTimeoutSeconds passed")
	assert.Equal(t, ptr.To[int32](3), s.ExitCode)
	assert.Contains(t, s.Output, "failing in b")
	assert.Greater(t, s.Attempts, int32(1), "it was retried until the deadline")
	assert.False(t, s.CompletionTime.Before(h.Status.Deadline), "it gave up at the deadline, not before: %s < %s", s.CompletionTime, h.Status.Deadline)
	waitEvent(t, ns, "never", stagehandv1.EventExecutionHookContainerFailed, "failing in b")
}

// waitEvent waits for an event on the ExecutionHook name with reason and a message
// containing text.
func waitEvent(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	sel := fields.Set{"involvedObject.name": name, "involvedObject.kind": "ExecutionHook"}.String()
	for {
		evs, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
		require.NoError(t, err)
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "no %s event with %q on %s: %+v", reason, text, name, evs.Items)
		time.Sleep(200 * time.Millisecond)
	}
}

// A command that hangs ends Timeout, and its processes are gone from the node afterwards.
// The node agent keeps an exec'd command running when its stream goes away, as a kubelet
// does, so this fails if the timeout only cancelled the stream.
func TestExecutionHookTimeoutStopsTheCommand(t *testing.T) {
	requireController(t)
	if !env.Local() {
		t.Skip("reads the node's /proc to see the command's processes: only on the local cluster, whose node runs them as host processes")
	}
	ns := env.Namespace(t)
	execPods(t, ns, "web", 1)
	hookAction(t, ns, "hang", 3, `sleep 3600 & echo "pids $$ $!"; wait`)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), selectorHook("hang", "hang", "web", "a"), metav1.CreateOptions{})
	require.NoError(t, err)

	h := waitHook(t, ns, "hang", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase)
	s := h.Status.HookStatuses[0]
	require.NotNil(t, s.Error)
	assert.Equal(t, stagehandv1.HookErrorTimeout, s.Error.ErrorType)
	assert.Contains(t, s.Error.Message, "was stopped")
	f := strings.Fields(podstatus.LastLine(s.Output))
	require.Len(t, f, 3, "the command's PIDs in %q", s.Output)
	for _, p := range f[1:] {
		pid, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 100*time.Millisecond,
			"process %d of the timed-out command still runs on the node", pid)
	}
}

// The controller is killed (SIGKILL) while a hook retries one container: afterwards the
// container that had already succeeded does not run again, and the deadline stays.
func TestExecutionHookSurvivesAControllerKill(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 1)
	// a succeeds at once; b fails until its 4th attempt. Both count their runs in the
	// pod's folder, which the two containers share on the local cluster's node.
	hookAction(t, ns, "count", 300, `echo x >> runs-$CTR; n=$(wc -l < runs-$CTR); echo "$CTR run $n"; [ "$CTR" = a ] || [ "$n" -ge 4 ]`)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), selectorHook("count", "count", "web"), metav1.CreateOptions{})
	require.NoError(t, err)

	before := waitHook(t, ns, "count", "a succeeded and b retrying", func(h *stagehandv1.ExecutionHook) bool {
		return len(h.Status.HookStatuses) == 2 && h.Status.HookStatuses[0].Succeed != nil && h.Status.HookStatuses[1].Attempts >= 2
	})
	require.Equal(t, ptr.To(true), before.Status.HookStatuses[0].Succeed)
	env.KillController(t)
	env.WaitForController(t)

	h := waitHook(t, ns, "count", "finished", finished)
	require.Equal(t, stagehandv1.ExecutionHookComplete, h.Status.Phase, "%+v", h.Status)
	assert.Equal(t, before.Status.StartTime, h.Status.StartTime, "the start is kept")
	assert.Equal(t, before.Status.Deadline, h.Status.Deadline, "the deadline is not reset")
	assert.Equal(t, int32(1), h.Status.HookStatuses[0].Attempts, "a, which had succeeded, did not run again")
	assert.Contains(t, h.Status.HookStatuses[0].Output, "a run 1")
	assert.GreaterOrEqual(t, h.Status.HookStatuses[1].Attempts, int32(4))

	// The count in the pod's folder says the same as the status: a ran once.
	out, err := env.Kubectl(ns, "exec", "web-0", "-c", "a", "--", "sh", "-c", "wc -l < runs-a")
	require.NoError(t, err, out)
	assert.Equal(t, "1", strings.TrimSpace(out), "container a ran the command once")
}

// A finished hook is deleted after its TTL.
func TestExecutionHookDeletedAfterItsTTL(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 1)
	hookAction(t, ns, "quick", 30, `true`)
	h := selectorHook("quick", "quick", "web", "a")
	h.Spec.TTLSecondsAfterFinished = ptr.To[int32](2)
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Create(context.Background(), h, metav1.CreateOptions{})
	require.NoError(t, err)
	waitHook(t, ns, "quick", "Complete", func(h *stagehandv1.ExecutionHook) bool { return h.Status.Phase == stagehandv1.ExecutionHookComplete })
	require.Eventually(t, func() bool {
		_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(context.Background(), "quick", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 200*time.Millisecond, "the finished hook was not deleted after its TTL")
}

// A hook whose HookAction does not exist is admitted, and fails at once with a clear
// status; a selector that matches nothing fails likewise.
func TestExecutionHookFailsClearlyWithoutItsActionOrPods(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	hooks := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns)
	_, err := hooks.Create(context.Background(), selectorHook("orphan", "missing", "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	h := waitHook(t, ns, "orphan", "finished", finished)
	assert.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase)
	require.NotNil(t, h.Status.Error)
	assert.Equal(t, stagehandv1.HookErrorActionNotFound, h.Status.Error.ErrorType)
	assert.Contains(t, h.Status.Error.Message, "HookAction missing does not exist")

	hookAction(t, ns, "present", 30, `true`)
	_, err = hooks.Create(context.Background(), selectorHook("nobody", "present", "nothing-has-this-label"), metav1.CreateOptions{})
	require.NoError(t, err)
	h = waitHook(t, ns, "nobody", "finished", finished)
	assert.Equal(t, stagehandv1.ExecutionHookFailed, h.Status.Phase)
	require.NotNil(t, h.Status.Error)
	assert.Equal(t, stagehandv1.HookErrorNoPods, h.Status.Error.ErrorType)
}

// kubectl stagehand exec run creates a hook and follows it; exec status prints a row per
// pod × container, and -o json the object. A failing hook exits 1 with the reason.
func TestCLIExecRunAndStatus(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	execPods(t, ns, "web", 2)
	hookAction(t, ns, "flush", 30, `echo "flushed $CTR"`)
	hookAction(t, ns, "broken", 2, `echo "cannot flush $CTR"; exit 7`)

	res := pluginOK(t, ns, "exec", "run", "flush", "-l", "app=web", "-c", "a", "--name", "flush-1", "--wait", "--timeout", "2m")
	assert.Contains(t, res.Stdout, "executionhook/flush-1 created")
	assert.Contains(t, res.Stdout, "Complete, 2/2 succeeded")

	res = pluginOK(t, ns, "exec", "status", "flush-1")
	for _, pod := range []string{"web-0", "web-1"} {
		assert.Regexp(t, pod+`\s+a\s+1\s+Succeeded\s+-\s+flushed a`, res.Stdout)
	}
	res = pluginOK(t, ns, "exec", "status", "executionhook/flush-1", "-o", "json")
	assert.Contains(t, res.Stdout, `"hookStatuses"`)

	res = plugin(t, ns, "exec", "run", "broken", "--pod", "web-1", "-c", "b", "--name", "broken-1", "--wait", "--timeout", "2m")
	assert.Equal(t, 1, res.ExitCode, "%s", res)
	assert.Regexp(t, `web-1\s+b\s+\d+\s+Failed\s+Error\s+cannot flush b`, res.Stdout)
	assert.Contains(t, res.Stderr, "executionhook/broken-1 failed")

	res = plugin(t, ns, "exec", "run", "flush")
	assert.Equal(t, 2, res.ExitCode, "a usage mistake: %s", res)
	assert.Contains(t, res.Stderr, "exactly one of -l SELECTOR and --pod NAME")
}
