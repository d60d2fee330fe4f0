package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as the kubelet reports them.
const (
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonPodCompleted             = "PodCompleted"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	maxStatusAttempts              = 5
)

// syncStatus writes the pod's status, re-reading the pod on conflicts. It reports whether
// the pod still exists.
func (w *podWorker) syncStatus(ctx context.Context) bool {
	pods := w.a.client.CoreV1().Pods(w.latest().Namespace)
	pod := w.latest()
	for attempt := 1; ; attempt++ {
		w.mu.Lock()
		updated := pod.DeepCopy()
		w.fillStatusLocked(&updated.Status, nowSecond())
		w.mu.Unlock()
		if apiequality.Semantic.DeepEqual(updated.Status, pod.Status) {
			return true
		}
		result, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			w.setPod(result)
			return true
		}
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			return false
		}
		if attempt == maxStatusAttempts {
			w.log.WithError(err).Warn("updating pod status; will retry on the next change")
			return true
		}
		fresh, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			return false
		}
		if getErr != nil || fresh.UID != pod.UID {
			w.log.WithError(getErr).Warn("re-reading pod for a status update")
			return fresh == nil || fresh.UID == pod.UID
		}
		pod = fresh
	}
}

// fillStatusLocked sets the fields of status that the node owns, keeping the others
// (conditions set by the scheduler or by users, QOS class, nominated node...).
func (w *podWorker) fillStatusLocked(status *corev1.PodStatus, now metav1.Time) {
	var inits, regular []corev1.ContainerStatus
	for _, c := range w.ctrs {
		if c.init {
			inits = append(inits, c.status)
		} else {
			regular = append(regular, c.status)
		}
	}
	status.InitContainerStatuses = inits
	status.ContainerStatuses = regular
	status.Phase = w.phaseLocked()
	status.Reason, status.Message = "", ""
	if w.failReason != "" {
		status.Reason, status.Message = w.failReason, w.failMessage
	}
	status.HostIP, status.PodIP = w.a.address, w.podIPOrHost()
	status.HostIPs = []corev1.HostIP{{IP: status.HostIP}}
	status.PodIPs = []corev1.PodIP{{IP: status.PodIP}}
	start := w.startTime
	status.StartTime = &start

	terminal := isTerminal(status.Phase)
	initialized, pendingInits := w.initializedLocked()
	var unready []string
	for _, c := range w.ctrs {
		if (!c.init || c.sidecar) && !c.status.Ready {
			unready = append(unready, c.spec.Name)
		}
	}
	setCondition(status, corev1.PodScheduled, true, "", "", now, false)
	setCondition(status, corev1.PodReadyToStartContainers, !terminal, "", "", now, true)
	if initialized {
		setCondition(status, corev1.PodInitialized, true, "", "", now, true)
	} else {
		setCondition(status, corev1.PodInitialized, false, reasonContainersNotInitialized,
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInits, " ")), now, true)
	}
	containersReady, reason, msg := len(unready) == 0 && !terminal, "", ""
	switch {
	case terminal:
		reason = reasonPodCompleted
	case !containersReady:
		reason = reasonContainersNotReady
		msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	setCondition(status, corev1.ContainersReady, containersReady, reason, msg, now, true)
	ready := containersReady
	if ready {
		if gate := unmetReadinessGate(w.pod, status); gate != "" {
			ready, reason, msg = false, reasonReadinessGatesNotReady, gate
		}
	}
	setCondition(status, corev1.PodReady, ready, reason, msg, now, true)
}

// initializedLocked reports whether every init container is done (a sidecar counts once it
// started) and names those that are not.
func (w *podWorker) initializedLocked() (bool, []string) {
	var pending []string
	for _, c := range w.ctrs {
		if !c.init {
			continue
		}
		if c.sidecar && c.run != nil {
			continue
		}
		if t := c.status.State.Terminated; t != nil && t.ExitCode == 0 && !c.sidecar {
			continue
		}
		pending = append(pending, c.spec.Name)
	}
	return len(pending) == 0, pending
}

func (w *podWorker) phaseLocked() corev1.PodPhase {
	if w.failReason != "" {
		return corev1.PodFailed
	}
	policy := w.pod.Spec.RestartPolicy
	if w.deleting {
		// A pod that is being deleted ends in a terminal phase, whatever its policy.
		policy = corev1.RestartPolicyNever
	}
	var inits, regular []corev1.ContainerStatus
	for _, c := range w.ctrs {
		switch {
		case c.sidecar:
		case c.init:
			inits = append(inits, c.status)
		default:
			regular = append(regular, c.status)
		}
	}
	return podPhase(policy, inits, regular)
}

// podPhase derives a pod's phase from its container states, the way the kubelet does:
// inits are the (non-sidecar) init containers, regular the containers.
func podPhase(policy corev1.RestartPolicy, inits, regular []corev1.ContainerStatus) corev1.PodPhase {
	for _, s := range inits {
		if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if policy == corev1.RestartPolicyNever {
			if t := s.State.Terminated; t != nil {
				return corev1.PodFailed
			}
		}
		return corev1.PodPending
	}
	var running, waiting, stopped, failed int
	for _, s := range regular {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode != 0 {
				failed++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
			if s.LastTerminationState.Terminated.ExitCode != 0 {
				failed++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped == 0:
		return corev1.PodPending
	case policy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case policy == corev1.RestartPolicyOnFailure && failed > 0:
		return corev1.PodRunning
	case failed > 0:
		return corev1.PodFailed
	}
	return corev1.PodSucceeded
}

// setCondition sets a condition, keeping its transition time when its status is unchanged.
// When owned is false, an existing condition is left alone.
func setCondition(status *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason, msg string, now metav1.Time, owned bool) {
	want := corev1.ConditionFalse
	if ok {
		want = corev1.ConditionTrue
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != t {
			continue
		}
		if !owned {
			return
		}
		if c.Status != want {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = want, reason, msg
		return
	}
	status.Conditions = append(status.Conditions, corev1.PodCondition{
		Type: t, Status: want, Reason: reason, Message: msg, LastTransitionTime: now,
	})
}

// unmetReadinessGate describes the first readiness gate whose condition is not True.
func unmetReadinessGate(pod *corev1.Pod, status *corev1.PodStatus) string {
	for _, g := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range status.Conditions {
			if c.Type != g.ConditionType {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				return fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, c.Status)
			}
		}
		if !found {
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		}
	}
	return ""
}

// nowSecond is the current time at the precision the API stores, so that a status that did
// not change compares equal to the stored one.
func nowSecond() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }
