package hookpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFailure(t *testing.T) {
	terminated := func(name string, code int32, reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: message}}}
	}
	tests := []struct {
		name       string
		status     corev1.PodStatus
		wantCode   int32
		wantReason string
		wantMsg    string
	}{
		{
			name: "the hook container's exit code, reason and message",
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "PodReason", Message: "pod message",
				ContainerStatuses: []corev1.ContainerStatus{terminated(ContainerName, 3, "Error", "migration failed")}},
			wantCode: 3, wantReason: "Error", wantMsg: "migration failed",
		},
		{
			name: "without a container message, the pod's",
			status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "pod message",
				ContainerStatuses: []corev1.ContainerStatus{terminated(ContainerName, 137, "OOMKilled", "")}},
			wantCode: 137, wantReason: "OOMKilled", wantMsg: "pod message",
		},
		{
			name: "another container's termination is not the hook's",
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "the node ran out of memory",
				ContainerStatuses: []corev1.ContainerStatus{terminated("sidecar", 1, "Error", "sidecar failed"), {Name: ContainerName}}},
			wantCode: -1, wantReason: "Evicted", wantMsg: "the node ran out of memory",
		},
		{
			name:     "no container status: the exit code is unknown",
			status:   corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long"},
			wantCode: -1, wantReason: "DeadlineExceeded", wantMsg: "too long",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-3-hook-pre"}, Status: tt.status}
			f := failure(pod, []string{"last line"})
			assert.Equal(t, "web-3-hook-pre", f.Pod)
			assert.Equal(t, tt.wantCode, f.ExitCode)
			assert.Equal(t, tt.wantReason, f.Reason)
			assert.Equal(t, tt.wantMsg, f.Message)
			assert.Equal(t, []string{"last line"}, f.LogTail)
			assert.False(t, f.Stuck)
		})
	}
}
