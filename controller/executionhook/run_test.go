package executionhook

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestOutputTailTakesOutTheMarkerAndKeepsTheEnd(t *testing.T) {
	o := &outputTail{}
	_, _ = o.Write([]byte(pidMarker + "42\nfirst"))
	_, _ = o.Write([]byte(" line\n"))
	assert.Equal(t, 42, o.PID())
	assert.Equal(t, "first line", o.String())

	o = &outputTail{}
	_, _ = o.Write([]byte("no marker here\n"))
	assert.Equal(t, 0, o.PID(), "output that does not start with the marker keeps its first line")
	assert.Equal(t, "no marker here", o.String())

	o = &outputTail{}
	for i := range 50 {
		_, _ = fmt.Fprintf(o, "line %d\n", i)
	}
	lines := strings.Split(o.String(), "\n")
	assert.Len(t, lines, tailLines)
	assert.Equal(t, "line 49", lines[len(lines)-1])

	o = &outputTail{}
	_, _ = o.Write([]byte(strings.Repeat("x", 5000)))
	assert.Len(t, o.String(), tailBytes)
}

func TestBackoffGrowsAndIsTheSameAfterARestart(t *testing.T) {
	assert.Equal(t, time.Second, backoffAfter(1))
	assert.Equal(t, 2*time.Second, backoffAfter(2))
	assert.Equal(t, 4*time.Second, backoffAfter(3))
	assert.Equal(t, 30*time.Second, backoffAfter(20), "capped")
}

// fakeExec records the containers it ran in and answers with exit.
type fakeExec struct {
	mu   sync.Mutex
	ran  []string
	exit func(container string) int
	// sleep is how long a command runs; output is what it prints after the greeting.
	sleep  time.Duration
	output string
}

func (f *fakeExec) Exec(ctx context.Context, _, pod, container string, argv []string, out io.Writer) (int, error) {
	if len(argv) > 3 && argv[3] == "stagehand-stop" {
		return 0, nil // the kill of a timed-out command
	}
	f.mu.Lock()
	f.ran = append(f.ran, pod+"/"+container)
	f.mu.Unlock()
	_, _ = fmt.Fprintf(out, "%s4242\nhello from %s\n%s", pidMarker, container, f.output)
	if f.sleep > 0 {
		select {
		case <-time.After(f.sleep):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return f.exit(container), nil
}

func runningPod(name string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: c, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

// A run that resumes a hook (a controller that restarted) never runs a container whose
// success is in the status again, keeps the deadline, and finishes the hook.
func TestRunResumesWithoutRunningSucceededContainersAgain(t *testing.T) {
	start := metav1.NewTime(time.Now().Add(-10 * time.Second).Truncate(time.Second))
	deadline := metav1.NewTime(start.Add(time.Minute))
	hook := &v1alpha1.ExecutionHook{
		ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", UID: "u1"},
		Spec:       v1alpha1.ExecutionHookSpec{ActionName: "a"},
		Status: v1alpha1.ExecutionHookStatus{
			Phase: v1alpha1.ExecutionHookRunning, Command: []string{"true"}, StartTime: &start, Deadline: &deadline,
			HookStatuses: []v1alpha1.ContainerExecutionHookStatus{
				{PodName: "p", ContainerName: "a", Attempts: 1, Succeed: ptrTo(true), Timestamp: &start},
				{PodName: "p", ContainerName: "b", Attempts: 1, Timestamp: &start}, // in flight when the old one died
			},
		},
	}
	sh := stagehandfake.NewSimpleClientset(hook)
	exec := &fakeExec{exit: func(string) int { return 0 }}
	c := &Controller{
		kube: kubefake.NewSimpleClientset(runningPod("p", "a", "b")), stagehand: sh, exec: exec,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: record.NewFakeRecorder(10), log: logrus.NewEntry(logrus.New()),
	}
	defer c.queue.ShutDown()
	r := c.start(context.Background(), hook)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end")
	}
	assert.Equal(t, []string{"p/b"}, exec.ran, "only the container without an outcome runs")
	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookComplete, got.Status.Phase)
	assert.Equal(t, "2/2", got.Status.Summary)
	assert.Equal(t, deadline, *got.Status.Deadline, "the deadline is kept")
	b := got.Status.HookStatuses[1]
	assert.Equal(t, int32(2), b.Attempts)
	assert.Equal(t, "hello from b", b.Output, "the wrapper's PID line is not output")
	assert.Equal(t, int32(1), got.Status.HookStatuses[0].Attempts)
}

// A container the pod lacks fails for good at once, without an exec.
func TestRunFailsAMissingContainerWithoutRetrying(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	deadline := metav1.NewTime(now.Add(time.Minute))
	hook := &v1alpha1.ExecutionHook{
		ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", UID: "u1"},
		Status: v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookRunning, Command: []string{"true"}, StartTime: &now, Deadline: &deadline,
			HookStatuses: []v1alpha1.ContainerExecutionHookStatus{{PodName: "p", ContainerName: "gone"}}},
	}
	sh := stagehandfake.NewSimpleClientset(hook)
	exec := &fakeExec{exit: func(string) int { return 0 }}
	c := &Controller{
		kube: kubefake.NewSimpleClientset(runningPod("p", "a")), stagehand: sh, exec: exec,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: record.NewFakeRecorder(10), log: logrus.NewEntry(logrus.New()),
	}
	defer c.queue.ShutDown()
	r := c.start(context.Background(), hook)
	<-r.done
	assert.Empty(t, exec.ran)
	got, err := sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), "h", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ExecutionHookFailed, got.Status.Phase)
	require.NotNil(t, got.Status.HookStatuses[0].Error)
	assert.Equal(t, v1alpha1.HookErrorContainerNotFound, got.Status.HookStatuses[0].Error.ErrorType)
}
