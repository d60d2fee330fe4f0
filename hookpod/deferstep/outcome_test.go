package deferstep

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExitNoteNamesTheCodeAndReason(t *testing.T) {
	sp := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.Now()}}},
	}}}
	assert.Equal(t, " (exit code 137, OOMKilled)", ExitNote(sp))
	sp.Status.ContainerStatuses[0].State.Terminated.Reason = ""
	assert.Equal(t, " (exit code 137)", ExitNote(sp))
	assert.Empty(t, ExitNote(&corev1.Pod{}))
}
