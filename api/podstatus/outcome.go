package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Finished reports whether pod has ended for good: Succeeded or Failed. A pod with
// restartPolicy Never (every run-once pod of Stagehand's) ends in one of the two.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Terminated is the terminated state of pod's container named container, or, when
// container is "", of its first terminated container. It is nil while that container has
// not terminated. Init containers are not looked at: FailedContainer does.
func Terminated(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for i := range pod.Status.ContainerStatuses {
		s := &pod.Status.ContainerStatuses[i]
		if container != "" && s.Name != container {
			continue
		}
		if s.State.Terminated != nil {
			return s.State.Terminated
		}
	}
	return nil
}

// ExitCode is the exit code of pod's container named container ("" for the first
// terminated one); ok is false while it has not terminated.
func ExitCode(pod *corev1.Pod, container string) (code int32, ok bool) {
	if t := Terminated(pod, container); t != nil {
		return t.ExitCode, true
	}
	return 0, false
}

// FailedContainer is the terminated state of pod's first container, init containers first,
// that exited with a non-zero code, or nil when none did.
func FailedContainer(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			if t := statuses[i].State.Terminated; t != nil && t.ExitCode != 0 {
				return t
			}
		}
	}
	return nil
}

// FinishedAt is when pod's container named container ("" for the first terminated one)
// terminated. When no terminated state says so (the pod was deleted before its container
// started, or the node went away), it is the pod's start, or its creation when it never
// started.
func FinishedAt(pod *corev1.Pod, container string) time.Time {
	if t := Terminated(pod, container); t != nil && !t.FinishedAt.IsZero() {
		return t.FinishedAt.Time
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}
