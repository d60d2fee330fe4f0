package strategies

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// PodAvailable reports whether pod counts as available at now, and when not yet, how long
// until it will be: podstatus.PodAvailable, the rule the controller checks a Complete
// revision by.
func PodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, recheck time.Duration) {
	return podstatus.PodAvailable(pod, minReadySeconds, now)
}

// PodCounts are the pods of one revision at one moment.
type PodCounts struct {
	// Pods counts every pod object, terminating ones included.
	Pods int32
	// Active counts the pods that are not terminating and not finished.
	Active int32
	// Running counts the pods that may still run a container: every pod not in a terminal
	// phase, terminating ones included, and a finished pod that still waits for its
	// DeferPolicy steps (the defer finalizer), whose clean-up belongs to its revision.
	Running int32
	// Available counts the available pods (see PodAvailable).
	Available int32
	// Recheck is the soonest time a Ready pod becomes available, 0 when none waits.
	Recheck time.Duration
}

// CountPods counts pods at now.
func CountPods(pods []*corev1.Pod, minReadySeconds int32, now time.Time) PodCounts {
	var c PodCounts
	for _, pod := range pods {
		c.Pods++
		finished := podstatus.Finished(pod)
		if pod.DeletionTimestamp == nil && !finished {
			c.Active++
		}
		if !finished || v1alpha1.HasDeferFinalizer(pod) {
			c.Running++
		}
		available, recheck := PodAvailable(pod, minReadySeconds, now)
		if available {
			c.Available++
		}
		if recheck > 0 && (c.Recheck == 0 || recheck < c.Recheck) {
			c.Recheck = recheck
		}
	}
	return c
}
