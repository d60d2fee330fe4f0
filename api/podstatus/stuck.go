package podstatus

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A pod whose container waits in one of these states does not start by itself in any
// useful time: the kubelet retries, but nothing changes until someone fixes the pod's
// references (a ConfigMap key, a Secret, the image). Left alone, such a pod waits out its
// whole activeDeadlineSeconds (6 hours by default for a deployer) and is then killed,
// and the cause goes with it. Stagehand fails a hook or deployer pod that stays stuck
// past a short grace instead, and keeps the pod for inspection.
//
// Waiting reasons, as the kubelet reports them.
const (
	// WaitingCreateContainerConfigError: the container's env, envFrom or volume refers
	// to a missing ConfigMap, Secret or key.
	WaitingCreateContainerConfigError = "CreateContainerConfigError"
	// WaitingCreateContainerError: the runtime refused to create the container.
	WaitingCreateContainerError = "CreateContainerError"
	// WaitingInvalidImageName: the image reference cannot be parsed.
	WaitingInvalidImageName = "InvalidImageName"
	// WaitingErrImageNeverPull: imagePullPolicy Never and the image is not on the node.
	WaitingErrImageNeverPull = "ErrImageNeverPull"
	// WaitingErrImagePull and WaitingImagePullBackOff alternate while a pull fails.
	WaitingErrImagePull     = "ErrImagePull"
	WaitingImagePullBackOff = "ImagePullBackOff"
)

// StuckGrace is how long a container may wait in a stuck state before it is called stuck.
type StuckGrace struct {
	// Config applies to CreateContainerConfigError, CreateContainerError,
	// InvalidImageName and ErrImageNeverPull: the kubelet retries them at every pod sync
	// (about every 10 s), so a ConfigMap or Secret created just after the pod, say by the
	// same `kubectl apply`, is still picked up.
	Config time.Duration
	// ImagePull applies to ErrImagePull and ImagePullBackOff: longer, because a registry
	// can fail for a moment, and the kubelet's pull back-off (10 s, doubling) makes about
	// four attempts in 2 minutes.
	ImagePull time.Duration
}

// DefaultStuckGrace is the grace of hook and deployer pods.
var DefaultStuckGrace = StuckGrace{Config: 30 * time.Second, ImagePull: 2 * time.Minute}

// of returns the grace of a waiting reason; ok is false when the reason is not a stuck one
// (ContainerCreating, PodInitializing, CrashLoopBackOff...: the kubelet is working on them,
// or the pod's restartPolicy and activeDeadlineSeconds bound them).
func (g StuckGrace) of(reason string) (time.Duration, bool) {
	switch reason {
	case WaitingCreateContainerConfigError, WaitingCreateContainerError, WaitingInvalidImageName, WaitingErrImageNeverPull:
		return g.Config, true
	case WaitingErrImagePull, WaitingImagePullBackOff:
		return g.ImagePull, true
	}
	return 0, false
}

// StuckContainer reports whether a container of pod (init containers first) has waited in
// a stuck state (the Waiting* reasons above) for at least its grace at now. reason is the
// waiting reason, and message names the container and carries the kubelet's message:
//
//	container "lifecycle" cannot start: CreateContainerConfigError: couldn't find key db in ConfigMap shop/settings
//
// A pod that has finished, or is being deleted, is never stuck.
//
// How long a container has waited: the waiting state has no timestamp, so the wait is
// counted from the latest moment the pod's status proves the container could not have
// started before: status.startTime (when the kubelet took the pod), the
// PodReadyToStartContainers condition, for a container the Initialized condition, for an
// init container the end (or start, for a sidecar) of the init containers before it, and
// the end of the container's own last run. This counts the image pull before a config
// error as waiting too; that is on purpose, since the grace is there for references created
// a moment after the pod, and it lets a caller that sees a pod for the first time (a
// deployer run again, a controller after a restart) judge it at once, without keeping
// state. The times come from the node's clock and now from the caller's: clock skew
// lengthens or shortens the grace by as much.
func StuckContainer(pod *corev1.Pod, now time.Time, grace StuckGrace) (reason, message string, stuck bool) {
	for _, w := range stuckWaits(pod, grace) {
		if !now.Before(w.at) {
			return w.reason, w.message, true
		}
	}
	return "", "", false
}

// StuckAt is when pod becomes stuck (StuckContainer) if its status does not change: the
// earliest such moment over its containers. ok is false when no container waits in a stuck
// state. A caller that watches the pod re-checks it then, since a watch only wakes on
// changes, and a stuck pod does not change.
func StuckAt(pod *corev1.Pod, grace StuckGrace) (at time.Time, ok bool) {
	for _, w := range stuckWaits(pod, grace) {
		if !ok || w.at.Before(at) {
			at, ok = w.at, true
		}
	}
	return at, ok
}

// stuckWait is a container waiting in a stuck state, and when its grace runs out.
type stuckWait struct {
	reason, message string
	at              time.Time
}

// stuckWaits lists the containers of pod that wait in a stuck state, init containers first.
func stuckWaits(pod *corev1.Pod, grace StuckGrace) []stuckWait {
	if pod == nil || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	var waits []stuckWait
	podStart := latest(pod.CreationTimestamp.Time, startTime(pod), conditionTrueSince(pod, corev1.PodReadyToStartContainers))
	earlierInits := podStart
	for _, s := range pod.Status.InitContainerStatuses {
		if w, ok := stuckWaitOf(s, "init container", latest(earlierInits, lastRunEnd(s)), grace); ok {
			waits = append(waits, w)
		}
		if t := s.State.Terminated; t != nil {
			earlierInits = latest(earlierInits, t.FinishedAt.Time)
		} else if r := s.State.Running; r != nil {
			earlierInits = latest(earlierInits, r.StartedAt.Time)
		}
	}
	initialized := latest(podStart, conditionTrueSince(pod, corev1.PodInitialized))
	for _, s := range pod.Status.ContainerStatuses {
		if w, ok := stuckWaitOf(s, "container", latest(initialized, lastRunEnd(s)), grace); ok {
			waits = append(waits, w)
		}
	}
	return waits
}

func stuckWaitOf(s corev1.ContainerStatus, kind string, since time.Time, grace StuckGrace) (stuckWait, bool) {
	w := s.State.Waiting
	if w == nil {
		return stuckWait{}, false
	}
	d, ok := grace.of(w.Reason)
	if !ok {
		return stuckWait{}, false
	}
	msg := fmt.Sprintf("%s %q cannot start: %s", kind, s.Name, w.Reason)
	if w.Message != "" {
		msg += ": " + w.Message
	}
	return stuckWait{reason: w.Reason, message: msg, at: since.Add(d)}, true
}

// conditionTrueSince is when the pod's condition t last became True; zero when it is not True.
func conditionTrueSince(pod *corev1.Pod, t corev1.PodConditionType) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// lastRunEnd is when the container's last run ended; zero when it never ran.
func lastRunEnd(s corev1.ContainerStatus) time.Time {
	if t := s.LastTerminationState.Terminated; t != nil {
		return t.FinishedAt.Time
	}
	return time.Time{}
}

// startTime is the pod's status.startTime; zero when it is not set.
func startTime(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime == nil {
		return time.Time{}
	}
	return pod.Status.StartTime.Time
}

func latest(times ...time.Time) time.Time {
	var out time.Time
	for _, t := range times {
		if t.After(out) {
			out = t
		}
	}
	return out
}
