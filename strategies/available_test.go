package strategies

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodAvailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(ready corev1.ConditionStatus, readyFor time.Duration, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-readyFor)),
		}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return p
	}
	tests := []struct {
		name            string
		pod             *corev1.Pod
		minReadySeconds int32
		wantAvailable   bool
		wantRecheck     time.Duration
	}{
		{name: "ready, no minReadySeconds", pod: pod(corev1.ConditionTrue, 0, false), wantAvailable: true},
		{name: "not ready", pod: pod(corev1.ConditionFalse, time.Hour, false)},
		{name: "no Ready condition", pod: &corev1.Pod{}},
		{name: "terminating", pod: pod(corev1.ConditionTrue, time.Hour, true)},
		{name: "ready long enough", pod: pod(corev1.ConditionTrue, 10*time.Second, false), minReadySeconds: 10, wantAvailable: true},
		{name: "ready too briefly", pod: pod(corev1.ConditionTrue, 4*time.Second, false), minReadySeconds: 10, wantRecheck: 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			available, recheck := PodAvailable(tt.pod, tt.minReadySeconds, now)
			assert.Equal(t, tt.wantAvailable, available)
			assert.Equal(t, tt.wantRecheck, recheck)
		})
	}
	counts := CountPods([]*corev1.Pod{pod(corev1.ConditionTrue, 0, false), pod(corev1.ConditionTrue, 2*time.Second, false), pod(corev1.ConditionFalse, 0, true)}, 5, now)
	assert.Equal(t, PodCounts{Pods: 3, Active: 2, Running: 3, Available: 0, Recheck: 3 * time.Second}, counts,
		"a terminating pod may still run a container")

	// Running: a finished pod has stopped, unless it waits for its defer steps.
	finished := func(phase corev1.PodPhase, finalizers ...string) *corev1.Pod {
		p := pod(corev1.ConditionFalse, 0, true)
		p.Status.Phase, p.Finalizers = phase, finalizers
		return p
	}
	counts = CountPods([]*corev1.Pod{finished(corev1.PodSucceeded), finished(corev1.PodFailed),
		finished(corev1.PodFailed, v1alpha1.DeferFinalizer), finished(corev1.PodRunning)}, 0, now)
	assert.Equal(t, int32(4), counts.Pods)
	assert.Equal(t, int32(2), counts.Running, "the pod still running and the one waiting for its defer steps")
}
