package nodeagent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func running() corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting() corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
}

func exited(code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func backingOff(code int32) corev1.ContainerStatus {
	s := waiting()
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code}
	return s
}

func TestPodPhase(t *testing.T) {
	type list = []corev1.ContainerStatus
	tests := []struct {
		name    string
		policy  corev1.RestartPolicy
		inits   list
		regular list
		want    corev1.PodPhase
	}{
		{name: "nothing started", policy: corev1.RestartPolicyAlways, regular: list{waiting()}, want: corev1.PodPending},
		{name: "init running", policy: corev1.RestartPolicyAlways, inits: list{running()}, regular: list{waiting()}, want: corev1.PodPending},
		{name: "init failed, Never", policy: corev1.RestartPolicyNever, inits: list{exited(1)}, regular: list{waiting()}, want: corev1.PodFailed},
		{name: "init failed, OnFailure", policy: corev1.RestartPolicyOnFailure, inits: list{backingOff(1)}, regular: list{waiting()}, want: corev1.PodPending},
		{name: "one container still waiting", policy: corev1.RestartPolicyAlways, inits: list{exited(0)}, regular: list{running(), waiting()}, want: corev1.PodPending},
		{name: "all running", policy: corev1.RestartPolicyAlways, regular: list{running(), running()}, want: corev1.PodRunning},
		{name: "one done one running", policy: corev1.RestartPolicyNever, regular: list{exited(0), running()}, want: corev1.PodRunning},
		{name: "crash loop", policy: corev1.RestartPolicyAlways, regular: list{backingOff(1)}, want: corev1.PodRunning},
		{name: "Always, exited", policy: corev1.RestartPolicyAlways, regular: list{exited(0)}, want: corev1.PodRunning},
		{name: "OnFailure, succeeded", policy: corev1.RestartPolicyOnFailure, regular: list{exited(0), exited(0)}, want: corev1.PodSucceeded},
		{name: "OnFailure, failed", policy: corev1.RestartPolicyOnFailure, regular: list{exited(0), backingOff(2)}, want: corev1.PodRunning},
		{name: "Never, succeeded", policy: corev1.RestartPolicyNever, regular: list{exited(0)}, want: corev1.PodSucceeded},
		{name: "Never, failed", policy: corev1.RestartPolicyNever, regular: list{exited(0), exited(137)}, want: corev1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, podPhase(tt.policy, tt.inits, tt.regular))
		})
	}
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	t0, t1 := nowSecond(), nowSecond()
	t1.Time = t1.Add(10e9)
	var st corev1.PodStatus
	setCondition(&st, corev1.PodReady, false, "ContainersNotReady", "x", t0, true)
	setCondition(&st, corev1.PodReady, false, "ContainersNotReady", "y", t1, true)
	assert.Equal(t, t0, st.Conditions[0].LastTransitionTime)
	assert.Equal(t, "y", st.Conditions[0].Message)
	setCondition(&st, corev1.PodReady, true, "", "", t1, true)
	assert.Equal(t, t1, st.Conditions[0].LastTransitionTime)
	setCondition(&st, corev1.PodReady, false, "", "", t1, false) // not owned: unchanged
	assert.Equal(t, corev1.ConditionTrue, st.Conditions[0].Status)
}

func TestUnmetReadinessGate(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/ok"}}}}
	st := &corev1.PodStatus{}
	assert.Contains(t, unmetReadinessGate(pod, st), "does not exist")
	st.Conditions = []corev1.PodCondition{{Type: "example.com/ok", Status: corev1.ConditionFalse}}
	assert.Contains(t, unmetReadinessGate(pod, st), "is not")
	st.Conditions[0].Status = corev1.ConditionTrue
	assert.Empty(t, unmetReadinessGate(pod, st))
}
