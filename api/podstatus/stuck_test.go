package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func waiting(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func TestStuckContainer(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	grace := StuckGrace{Config: 30 * time.Second, ImagePull: 2 * time.Minute}
	const missingKey = "couldn't find key missing in ConfigMap ns/cfg"
	configError := waiting("hook", WaitingCreateContainerConfigError, missingKey)

	// pod is a Pending pod the kubelet took at t0, initialized at t0+initialized.
	pod := func(initialized time.Duration, inits []corev1.ContainerStatus, containers ...corev1.ContainerStatus) *corev1.Pod {
		start := at(0)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: at(-time.Second)},
			Status: corev1.PodStatus{
				Phase: corev1.PodPending, StartTime: &start,
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(-time.Second)},
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at(initialized)},
				},
				InitContainerStatuses: inits,
				ContainerStatuses:     containers,
			},
		}
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		now         time.Duration // after t0
		wantReason  string
		wantMessage string
		wantAt      time.Duration // after t0; only when a container waits in a stuck state
		waits       bool
	}{
		{name: "config error within its grace", pod: pod(0, nil, configError), now: 29 * time.Second,
			waits: true, wantAt: 30 * time.Second},
		{name: "config error past its grace", pod: pod(0, nil, configError), now: 30 * time.Second,
			wantReason:  WaitingCreateContainerConfigError,
			wantMessage: `container "hook" cannot start: CreateContainerConfigError: ` + missingKey,
			waits:       true, wantAt: 30 * time.Second},
		{name: "counted from Initialized, not from startTime", pod: pod(20*time.Second, nil, configError), now: 45 * time.Second,
			waits: true, wantAt: 50 * time.Second},
		{name: "counted from the end of the container's last run",
			pod: pod(0, nil, corev1.ContainerStatus{Name: "hook",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: WaitingCreateContainerConfigError}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(time.Minute)}}}),
			now: 80 * time.Second, waits: true, wantAt: 90 * time.Second},
		{name: "image pull error within its longer grace", pod: pod(0, nil, waiting("app", WaitingImagePullBackOff, `Back-off pulling image "app:nope"`)),
			now: time.Minute, waits: true, wantAt: 2 * time.Minute},
		{name: "image pull error past its grace", pod: pod(0, nil, waiting("app", WaitingErrImagePull, "manifest unknown")),
			now: 2 * time.Minute, wantReason: WaitingErrImagePull, wantMessage: `container "app" cannot start: ErrImagePull: manifest unknown`,
			waits: true, wantAt: 2 * time.Minute},
		{name: "invalid image name, no kubelet message", pod: pod(0, nil, waiting("app", WaitingInvalidImageName, "")),
			now: time.Hour, wantReason: WaitingInvalidImageName, wantMessage: `container "app" cannot start: InvalidImageName`,
			waits: true, wantAt: 30 * time.Second},
		{name: "ContainerCreating is not stuck", pod: pod(0, nil, waiting("app", "ContainerCreating", "")), now: time.Hour},
		{name: "CrashLoopBackOff is not stuck", pod: pod(0, nil, waiting("app", "CrashLoopBackOff", "back-off 5m0s")), now: time.Hour},
		{name: "a running container is not stuck",
			pod: pod(0, nil, corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(0)}}}),
			now: time.Hour},
		{name: "init container counted from the end of the one before it",
			pod: pod(0, []corev1.ContainerStatus{
				{Name: "first", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(40 * time.Second)}}},
				waiting("second", WaitingCreateContainerConfigError, `secret "db" not found`),
			}, waiting("app", "PodInitializing", "")),
			now: 70 * time.Second, wantReason: WaitingCreateContainerConfigError,
			wantMessage: `init container "second" cannot start: CreateContainerConfigError: secret "db" not found`,
			waits:       true, wantAt: 70 * time.Second},
		{name: "the earliest of two", pod: pod(0, nil, waiting("a", WaitingImagePullBackOff, ""), waiting("b", WaitingCreateContainerError, "name in use")),
			now: time.Minute, wantReason: WaitingCreateContainerError, wantMessage: `container "b" cannot start: CreateContainerError: name in use`,
			waits: true, wantAt: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, message, stuck := StuckContainer(tt.pod, t0.Add(tt.now), grace)
			assert.Equal(t, tt.wantReason != "", stuck)
			assert.Equal(t, tt.wantReason, reason)
			assert.Equal(t, tt.wantMessage, message)
			gotAt, waits := StuckAt(tt.pod, grace)
			assert.Equal(t, tt.waits, waits)
			if tt.waits {
				assert.Equal(t, t0.Add(tt.wantAt), gotAt)
				// StuckAt and StuckContainer agree: stuck exactly from that moment on.
				_, _, before := StuckContainer(tt.pod, gotAt.Add(-time.Nanosecond), grace)
				_, _, after := StuckContainer(tt.pod, gotAt, grace)
				assert.False(t, before, "not stuck before StuckAt")
				assert.True(t, after, "stuck at StuckAt")
			}
		})
	}
}

func TestStuckContainerIgnoresFinishedAndDeletedPods(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	now := old.Add(time.Hour)
	for _, tt := range []struct {
		name   string
		mutate func(*corev1.Pod)
	}{
		{name: "failed", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }},
		{name: "succeeded", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }},
		{name: "being deleted", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &old }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, StartTime: &old,
				ContainerStatuses: []corev1.ContainerStatus{waiting("hook", WaitingCreateContainerConfigError, "")}}}
			_, _, stuck := StuckContainer(p, now, DefaultStuckGrace)
			require.True(t, stuck, "precondition: the pending pod is stuck")
			tt.mutate(p)
			_, _, stuck = StuckContainer(p, now, DefaultStuckGrace)
			assert.False(t, stuck)
			_, waits := StuckAt(p, DefaultStuckGrace)
			assert.False(t, waits)
		})
	}
	assert.NotPanics(t, func() { StuckContainer(nil, now, DefaultStuckGrace) })
}
