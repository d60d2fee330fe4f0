package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func terminated(name string, code int32, at time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: "Error", FinishedAt: metav1.NewTime(at)}}}
}

func running(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func TestFinished(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]bool{
		corev1.PodPending: false, corev1.PodRunning: false, corev1.PodUnknown: false,
		corev1.PodSucceeded: true, corev1.PodFailed: true,
	} {
		assert.Equal(t, want, Finished(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}), phase)
	}
}

func TestTerminatedAndExitCode(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		running("app"), terminated("sidecar", 3, at),
	}}}
	code, ok := ExitCode(pod, "sidecar")
	assert.True(t, ok)
	assert.Equal(t, int32(3), code)
	_, ok = ExitCode(pod, "app")
	assert.False(t, ok, "a running container has no exit code")
	_, ok = ExitCode(pod, "missing")
	assert.False(t, ok)
	code, ok = ExitCode(pod, "")
	assert.True(t, ok, `"" takes the first terminated container`)
	assert.Equal(t, int32(3), code)
	assert.Nil(t, Terminated(&corev1.Pod{}, ""))
}

func TestFailedContainerLooksAtInitContainersFirst(t *testing.T) {
	at := time.Now()
	pod := &corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{terminated("init-ok", 0, at), terminated("init-bad", 2, at)},
		ContainerStatuses:     []corev1.ContainerStatus{terminated("app", 1, at)},
	}}
	assert.Equal(t, int32(2), FailedContainer(pod).ExitCode)
	pod.Status.InitContainerStatuses = nil
	assert.Equal(t, int32(1), FailedContainer(pod).ExitCode)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", 0, at)}
	assert.Nil(t, FailedContainer(pod), "exit code 0 is no failure")
}

func TestFinishedAtFallsBackToStartThenCreation(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started, ended := created.Add(time.Second), created.Add(time.Minute)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	assert.Equal(t, created, FinishedAt(pod, ""))
	pod.Status.StartTime = &metav1.Time{Time: started}
	assert.Equal(t, started, FinishedAt(pod, ""))
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("c", 0, ended)}
	assert.Equal(t, ended, FinishedAt(pod, "c"))
	assert.Equal(t, ended, FinishedAt(pod, ""))
	assert.Equal(t, started, FinishedAt(pod, "other"))
}
