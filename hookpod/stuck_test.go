package hookpod_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

const missingKey = "couldn't find key missing in ConfigMap ns/cfg"

// noWatchList is a pod client of the fake clientset that says it cannot stream the
// initial list of a watch (WatchList), as the fake clientset itself does: its typed
// clients do not say so, and a reflector over them would wait for a bookmark forever.
type noWatchList struct{ corev1client.PodInterface }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// core is the CoreV1 client of the fake clientset, with noWatchList pod clients.
type core struct{ corev1client.CoreV1Interface }

func (c core) Pods(ns string) corev1client.PodInterface {
	return noWatchList{c.CoreV1Interface.Pods(ns)}
}

// lines is a Printer that keeps what it is given.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Printf(format string, args ...any) { l.Println("--> " + fmt.Sprintf(format, args...)) }
func (l *lines) Println(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, line)
}

func hookPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{v1alpha1.HookStageLabel: "pre"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: new(int64(3600)),
			Containers: []corev1.Container{{Name: hookpod.ContainerName, Image: "app:2"}},
		},
	}
}

// configError is the status the kubelet reports for a hook container whose env refers to
// a missing ConfigMap key, for a pod it took at start.
func configError(start time.Time) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodPending, StartTime: &metav1.Time{Time: start},
		ContainerStatuses: []corev1.ContainerStatus{{Name: hookpod.ContainerName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: podstatus.WaitingCreateContainerConfigError, Message: missingKey}}}},
	}
}

// setStatus plays the kubelet: it waits for the pod to exist, then writes its status.
func setStatus(t *testing.T, pods corev1client.PodInterface, name string, status corev1.PodStatus) {
	t.Helper()
	var pod *corev1.Pod
	require.Eventually(t, func() bool {
		var err error
		pod, err = pods.Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the hook pod %s is created", name)
	pod.Status = status
	_, err := pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// execute runs Execute in the background; its result arrives on the channel.
func execute(ctx context.Context, e hookpod.HookExecutor, pod *corev1.Pod) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Execute(ctx, pod) }()
	return done
}

func TestExecuteFailsAPodStuckInCreateContainerConfigErrorAfterTheGraceAndKeepsIt(t *testing.T) {
	client := fake.NewClientset()
	pods := noWatchList{client.CoreV1().Pods("ns")}
	grace := 500 * time.Millisecond
	e := hookpod.NewExecutorWithGrace(pods, &lines{}, podstatus.StuckGrace{Config: grace, ImagePull: time.Hour})

	done := execute(t.Context(), e, hookPod("web-3-hook-pre"))
	// The status is written once: only the grace's timer can end the wait.
	start := time.Now()
	setStatus(t, pods, "web-3-hook-pre", configError(start))

	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return; a stuck hook pod must fail after its grace")
	}
	assert.GreaterOrEqual(t, time.Since(start), grace, "not before the grace has run out")
	var failed *hookpod.PodFailedError
	require.ErrorAs(t, err, &failed)
	assert.True(t, failed.Stuck)
	assert.Equal(t, podstatus.WaitingCreateContainerConfigError, failed.Reason)
	assert.Equal(t, int32(-1), failed.ExitCode)
	assert.Equal(t, `container "lifecycle" cannot start: CreateContainerConfigError: `+missingKey, failed.Message)
	assert.Contains(t, err.Error(), "hook pod web-3-hook-pre failed")
	assert.Contains(t, err.Error(), missingKey)

	kept, getErr := pods.Get(context.Background(), "web-3-hook-pre", metav1.GetOptions{})
	require.NoError(t, getErr, "a stuck hook pod is kept for inspection, not deleted")
	require.NotNil(t, kept.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, int64(1), *kept.Spec.ActiveDeadlineSeconds, "stopped, so that it never starts once the ConfigMap appears")
}

func TestExecuteRunsAPodThatLeavesTheWaitingStateWithinTheGrace(t *testing.T) {
	client := fake.NewClientset()
	pods := noWatchList{client.CoreV1().Pods("ns")}
	grace := 700 * time.Millisecond
	e := hookpod.NewExecutorWithGrace(pods, &lines{}, podstatus.StuckGrace{Config: grace, ImagePull: time.Hour})

	done := execute(t.Context(), e, hookPod("web-3-hook-pre"))
	start := time.Now()
	setStatus(t, pods, "web-3-hook-pre", configError(start))

	// When the ConfigMap appears and the container starts within the grace
	time.Sleep(grace / 4)
	running := configError(start)
	running.Phase = corev1.PodRunning
	running.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	setStatus(t, pods, "web-3-hook-pre", running)

	// Then the hook runs on past the grace
	time.Sleep(2 * grace)
	select {
	case err := <-done:
		t.Fatalf("Execute returned %v while the hook ran", err)
	default:
	}
	succeeded := running.DeepCopy()
	succeeded.Phase = corev1.PodSucceeded
	succeeded.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	setStatus(t, pods, "web-3-hook-pre", *succeeded)

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return after the hook pod succeeded")
	}
	pod, err := pods.Get(context.Background(), "web-3-hook-pre", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(3600), *pod.Spec.ActiveDeadlineSeconds, "a hook pod that ran is not stopped")
}

// stuckKubelet sets every hook pod created in ns to wait in CreateContainerConfigError
// since an hour ago, as a kubelet would report a pod that a deployer run again adopts.
func stuckKubelet(t *testing.T, client *fake.Clientset) {
	t.Helper()
	pods := client.CoreV1().Pods("ns")
	w, err := pods.Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Added || !ok {
				continue
			}
			pod.Status = configError(time.Now().Add(-time.Hour))
			_, _ = pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
		}
	}()
}

func TestRunnerAbortsOnAStuckHookPodWithItsMessage(t *testing.T) {
	client := fake.NewClientset()
	stuckKubelet(t, client)
	out := &lines{}
	r := hookpod.NewRunner(core{client.CoreV1()}, revision("web-3"), hookpod.Options{Out: out})

	err := r.Run(t.Context(), "pre", hook())

	var abort *hookpod.AbortError
	require.ErrorAs(t, err, &abort)
	var podFailed *hookpod.PodFailedError
	require.ErrorAs(t, abort.Last, &podFailed)
	assert.True(t, podFailed.Stuck)
	msg := err.Error()
	assert.Contains(t, msg, missingKey, "the message names the missing key")
	assert.Contains(t, msg, "failurePolicy Abort")
	assert.Contains(t, msg, "kubectl describe pod web-3-hook-pre", "a pod that never started has no log to read")
	assert.NotContains(t, msg, "its log ends with")

	_, getErr := client.CoreV1().Pods("ns").Get(context.Background(), "web-3-hook-pre", metav1.GetOptions{})
	assert.NoError(t, getErr, "the stuck hook pod is kept")
	events, listErr := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, listErr)
	var warned bool
	for _, ev := range events.Items {
		if ev.Reason == v1alpha1.EventHookFailed {
			warned = true
			assert.Contains(t, ev.Message, missingKey)
		}
	}
	assert.True(t, warned, "a HookFailed event is recorded")
}

func TestRunnerRetriesAStuckHookPodWithinMaxAttempts(t *testing.T) {
	client := fake.NewClientset()
	stuckKubelet(t, client)
	h := hook()
	h.FailurePolicy = v1alpha1.LifecycleHookFailurePolicyRetry
	h.Retry = &v1alpha1.RetryParams{MaxAttempts: 2, Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: 0, MaxDelaySeconds: 1}}
	r := hookpod.NewRunner(core{client.CoreV1()}, revision("web-3"), hookpod.Options{Out: &lines{}})

	err := r.Run(t.Context(), "pre", h)

	var abort *hookpod.AbortError
	require.ErrorAs(t, err, &abort, "a stuck pod is a failed attempt; the attempts run out")
	assert.Equal(t, int32(2), abort.Attempts)
	assert.Contains(t, err.Error(), missingKey)
	for _, name := range []string{"web-3-hook-pre", "web-3-hook-pre-2"} {
		pod, getErr := client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if assert.NoError(t, getErr, "attempt %s is kept", name) {
			assert.Equal(t, int64(1), *pod.Spec.ActiveDeadlineSeconds, "attempt %s is stopped before the next one starts", name)
		}
	}
	assert.False(t, errors.Is(err, context.Canceled))
}
