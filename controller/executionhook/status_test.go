package executionhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// runningHook is a Running hook over pod p's containers, with timeout from now.
func runningHook(timeout time.Duration, parallelism *int32, containers ...string) *v1alpha1.ExecutionHook {
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	deadline := metav1.NewTime(start.Add(timeout))
	h := &v1alpha1.ExecutionHook{
		ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", UID: "u1"},
		Spec:       v1alpha1.ExecutionHookSpec{ActionName: "a", Parallelism: parallelism},
		Status: v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookRunning, Command: []string{"true"},
			StartTime: &start, Deadline: &deadline},
	}
	for _, c := range containers {
		h.Status.HookStatuses = append(h.Status.HookStatuses, v1alpha1.ContainerExecutionHookStatus{PodName: "p", ContainerName: c})
	}
	return h
}

func runController(sh *stagehandfake.Clientset, exec Executor, pod *corev1.Pod) *Controller {
	return &Controller{
		kube: kubefake.NewSimpleClientset(pod), stagehand: sh, exec: exec,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: record.NewFakeRecorder(100), log: logrus.NewEntry(logrus.New()),
	}
}

func waitDone(t *testing.T, r *run) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
}

// The bounds hold for the most entries with long outputs and messages: the status stays
// far below etcd's limit, each output keeps its end and each message its start, as UTF-8.
func TestBoundStatusKeepsTheStatusSmall(t *testing.T) {
	st := &v1alpha1.ExecutionHookStatus{}
	long := strings.Repeat("é", 2048) + "the end"
	for i := range MaxContainers {
		st.HookStatuses = append(st.HookStatuses, v1alpha1.ContainerExecutionHookStatus{
			PodName: fmt.Sprintf("pod-%04d", i), ContainerName: "app", Output: long,
			Error: &v1alpha1.HookError{ErrorType: v1alpha1.HookErrorError, Message: "the start " + long}})
	}
	boundStatus(st)
	output, message := v1alpha1.EntryTextBounds(MaxContainers)
	for _, e := range st.HookStatuses {
		require.LessOrEqual(t, len(e.Output), output)
		require.LessOrEqual(t, len(e.Error.Message), message)
		require.True(t, strings.HasSuffix(e.Output, "the end"))
		require.True(t, strings.HasPrefix(e.Error.Message, "the start"))
		require.True(t, utf8.ValidString(e.Output) && utf8.ValidString(e.Error.Message))
	}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Less(t, len(b), 512<<10, "1000 entries take less than 512 KiB")

	few := &v1alpha1.ExecutionHookStatus{HookStatuses: []v1alpha1.ContainerExecutionHookStatus{{Output: "short"}}}
	boundStatus(few)
	assert.Equal(t, "short", few.HookStatuses[0].Output, "a short output is kept")
}

// A status that the apiserver refuses as too large ends the hook Failed with a status
// that can be written, instead of a run that restarts and runs the commands again.
func TestRunEndsAHookWhoseStatusIsTooLarge(t *testing.T) {
	hook := runningHook(time.Minute, nil, "a", "b")
	sh := stagehandfake.NewSimpleClientset(hook)
	refused := 0
	sh.PrependReactor("update", "executionhooks", func(a k8stesting.Action) (bool, runtime.Object, error) {
		h := a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.ExecutionHook)
		for _, e := range h.Status.HookStatuses {
			if e.Output != "" { // stands for a status over the limit
				refused++
				return true, nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
			}
		}
		return false, nil, nil
	})
	exec := &fakeExec{exit: func(string) int { return 0 }}
	c := runController(sh, exec, runningPod("p", "a", "b"))
	defer c.queue.ShutDown()
	r := c.start(context.Background(), hook)
	waitDone(t, r)

	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookFailed, got.Status.Phase)
	require.NotNil(t, got.Status.Error)
	assert.Equal(t, reasonStatusNotWritable, got.Status.Error.Reason)
	assert.Contains(t, got.Status.Error.Message, "limit is 3145728")
	assert.NotNil(t, got.Status.CompletionTime, "the TTL counts from it")
	require.Len(t, got.Status.HookStatuses, 2)
	for _, e := range got.Status.HookStatuses {
		assert.NotNil(t, e.Succeed, "every entry has an outcome")
		assert.Empty(t, e.Output)
	}
	assert.LessOrEqual(t, len(exec.ran), 2, "no command runs again")
	assert.Positive(t, refused)
}

// A container waiting for a parallelism slot gets the action's timeout from its own
// first attempt, not from the hook's start: with parallelism 1 and a command that takes
// most of the timeout, the second container still runs to its end.
func TestDeadlineCountsFromEachContainersFirstAttempt(t *testing.T) {
	hook := runningHook(2*time.Second, ptrTo(int32(1)), "a", "b")
	sh := stagehandfake.NewSimpleClientset(hook)
	exec := &fakeExec{exit: func(string) int { return 0 }, sleep: 1500 * time.Millisecond}
	c := runController(sh, exec, runningPod("p", "a", "b"))
	defer c.queue.ShutDown()
	r := c.start(context.Background(), hook)
	waitDone(t, r)

	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookComplete, got.Status.Phase, "%+v", got.Status.HookStatuses)
	a, b := got.Status.HookStatuses[0], got.Status.HookStatuses[1]
	require.NotNil(t, a.Deadline)
	require.NotNil(t, b.Deadline)
	if b.Deadline.Before(a.Deadline) {
		a, b = b, a // either may get the slot first
	}
	assert.GreaterOrEqual(t, b.Deadline.Sub(a.Deadline.Time), time.Second, "the queued container's deadline is later")
	for _, e := range []v1alpha1.ContainerExecutionHookStatus{a, b} {
		assert.False(t, e.Deadline.Time.Before(e.Timestamp.Add(2*time.Second)), "the timeout counts from the first attempt")
	}
}

// A resumed entry keeps the deadline it was given; an entry that has attempts from a
// controller that kept one deadline for the hook keeps the hook's.
func TestContainerDeadlineSurvivesARestart(t *testing.T) {
	hook := runningHook(time.Minute, nil, "a", "b", "c")
	own := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
	hook.Status.HookStatuses[0].Deadline, hook.Status.HookStatuses[0].Attempts = &own, 1
	hook.Status.HookStatuses[1].Attempts = 1
	now := time.Now()
	assert.Equal(t, own.Time, containerDeadline(&hook.Status, 0, now))
	assert.Equal(t, hook.Status.Deadline.Time, containerDeadline(&hook.Status, 1, now))
	fresh := containerDeadline(&hook.Status, 2, now)
	assert.False(t, fresh.Before(now.Add(time.Minute)))
	assert.True(t, fresh.Before(now.Add(time.Minute+time.Second)))
	assert.Equal(t, fresh, fresh.Truncate(time.Second), "whole seconds, as written")
}

// The in-memory status can be read while a write is in flight: the lock guards only
// the memory, not the apiserver call.
func TestSnapshotDoesNotWaitForAWrite(t *testing.T) {
	hook := runningHook(time.Minute, nil, "a")
	sh := stagehandfake.NewSimpleClientset(hook)
	inWrite, release := make(chan struct{}), make(chan struct{})
	sh.PrependReactor("update", "executionhooks", func(k8stesting.Action) (bool, runtime.Object, error) {
		close(inWrite)
		<-release
		return false, nil, nil
	})
	c := runController(sh, &fakeExec{exit: func(string) int { return 0 }}, runningPod("p", "a"))
	defer c.queue.ShutDown()
	r := &run{c: c, hook: hook.DeepCopy(), cancel: func() {}, done: make(chan struct{}), stopped: make(chan struct{})}
	wrote := make(chan error)
	go func() {
		wrote <- r.update(context.Background(), func(s *v1alpha1.ExecutionHookStatus) { s.HookStatuses[0].Attempts = 1 })
	}()
	<-inWrite
	read := make(chan *v1alpha1.ExecutionHook)
	go func() { read <- r.snapshot() }()
	select {
	case h := <-read:
		assert.Equal(t, int32(1), h.Status.HookStatuses[0].Attempts, "the change being written is seen")
	case <-time.After(5 * time.Second):
		t.Error("snapshot waited for the write")
	}
	close(release)
	require.NoError(t, <-wrote)
}
