package strategies

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// A pod of the revision a strategy waits for whose container cannot start
// (podstatus.StuckContainer: a missing ConfigMap key, runAsNonRoot with an image that runs
// as root, an image that cannot be pulled) fails the rollout once the grace of
// podstatus.DefaultStuckGrace has run out, as a stuck hook or deployer pod does, instead of
// waiting out timeoutSeconds. The rule is simple on purpose: one stuck pod of the new
// revision fails the rollout. Every pod of a revision runs the same template, so the
// others would wait the same way; the kubelet goes on retrying the pod, but nothing in
// the rollout changes until someone fixes what the template refers to. Pods of other
// revisions (the old ones being scaled down) never fail the rollout.

// PodStuckError stops a rollout because a pod of the revision it waits for cannot start.
// The deployer reports it with exit code 1 and Reason, the kubelet's waiting reason, as
// the revision's reason.
type PodStuckError struct {
	// Revision is the ReplicaSet whose pod is stuck.
	Revision string
	// Pod is the name of the stuck pod.
	Pod string
	// Reason is the container's waiting reason, e.g. CreateContainerConfigError.
	Reason string
	// Message is podstatus.StuckContainer's message: the container and the kubelet's words.
	Message string
}

func (e *PodStuckError) Error() string {
	return fmt.Sprintf("pod %s: %s; see kubectl describe pod %s, then fix what the pod template of %s refers to "+
		"(a ConfigMap, a Secret, the image, its securityContext) and start a new rollout", e.Pod, e.Message, e.Pod, e.Revision)
}

// StuckPod looks for a pod of revision among pods whose container cannot start at now
// (podstatus.StuckContainer with podstatus.DefaultStuckGrace). It returns the first such
// pod by name as a *PodStuckError, or nil and how long until the soonest pod becomes stuck
// if its status does not change: 0 when no pod waits in a stuck state. A wait re-checks
// then, since a stuck pod sends no updates that would wake it.
func StuckPod(revision string, pods []*corev1.Pod, now time.Time) (*PodStuckError, time.Duration) {
	var recheck time.Duration
	for _, pod := range slices.SortedFunc(slices.Values(pods), byName) {
		if reason, msg, stuck := podstatus.StuckContainer(pod, now, podstatus.DefaultStuckGrace); stuck {
			return &PodStuckError{Revision: revision, Pod: pod.Name, Reason: reason, Message: msg}, 0
		}
		if at, ok := podstatus.StuckAt(pod, podstatus.DefaultStuckGrace); ok {
			// at is after now (the pod is not stuck yet); at least 1 ns all the same, as 0 means
			// no re-check.
			if d := max(at.Sub(now), time.Nanosecond); recheck == 0 || d < recheck {
				recheck = d
			}
		}
	}
	return nil, recheck
}

func byName(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }

// sooner is the sooner of two re-check delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
