package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodAvailable reports whether pod counts as available at now: not terminating, not
// finished, and Ready for at least minReadySeconds, measured from the Ready condition's
// lastTransitionTime. When the pod is Ready but not yet long enough, recheck is how long
// until it will be. The deployer's waits and the controller's proof of a Complete
// revision (DESIGN.md §4 invariant 6) count pods by this one rule.
func PodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, recheck time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return false, 0
		}
		if minReadySeconds <= 0 {
			return true, 0
		}
		availableAt := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
		if !now.Before(availableAt) {
			return true, 0
		}
		return false, availableAt.Sub(now)
	}
	return false, 0
}
