package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitingPod returns a Pending pod in namespace ns whose one container, app, has waited
// with reason and message since the kubelet took the pod (status.startTime), as a pod
// whose container cannot start: reason CreateContainerConfigError and the message
// "couldn't find key db in ConfigMap ns/settings", say.
func WaitingPod(ns, name string, labels map[string]string, reason, message string, since time.Time) *corev1.Pod {
	started := metav1.NewTime(since)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, CreationTimestamp: started},
		Status: corev1.PodStatus{
			Phase:     corev1.PodPending,
			StartTime: &started,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:  "app",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
			}},
		},
	}
}

// ReadyPod returns a Running pod in namespace ns that has been Ready since since.
func ReadyPod(ns, name string, labels map[string]string, since time.Time) *corev1.Pod {
	started := metav1.NewTime(since)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, CreationTimestamp: started},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			StartTime:  &started,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			}},
		},
	}
}
