package deployerpod

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// podDeadlineExceeded is the pod status reason the kubelet sets when activeDeadlineSeconds passed.
const podDeadlineExceeded = "DeadlineExceeded"

// revisionPhaseFor maps a deployer pod's phase to the revision phase it implies.
func revisionPhaseFor(pod *corev1.Pod) v1alpha1.RevisionPhase {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return v1alpha1.RevisionPhaseRunning
	case corev1.PodSucceeded:
		return v1alpha1.RevisionPhaseComplete
	case corev1.PodFailed:
		return v1alpha1.RevisionPhaseFailed
	}
	return v1alpha1.RevisionPhasePending
}

// parseTerminationMessage reads the deployer's `{"reason","message"}`. Anything else (a log
// tail from FallbackToLogsOnError, or an image that ignores the contract) becomes reason
// Failed with the trimmed text as the message.
func parseTerminationMessage(raw string) v1alpha1.TerminationMessage {
	raw = strings.TrimSpace(raw)
	var m v1alpha1.TerminationMessage
	if raw != "" && json.Unmarshal([]byte(raw), &m) == nil && m.Reason != "" {
		m.Message = podstatus.TruncateEnd(strings.TrimSpace(m.Message), v1alpha1.MaxStatusMessage)
		return m
	}
	return v1alpha1.TerminationMessage{Reason: v1alpha1.ReasonFailed, Message: podstatus.TruncateEnd(raw, v1alpha1.MaxStatusMessage)}
}

// podOutcome is the reason and message of a finished deployer pod.
func podOutcome(pod *corev1.Pod) v1alpha1.TerminationMessage {
	if pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == podDeadlineExceeded {
		msg := "the deployer pod ran longer than the strategy's activeDeadlineSeconds"
		if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
			msg = fmt.Sprintf("the deployer pod ran longer than the strategy's activeDeadlineSeconds (%ds)", *d)
		}
		return v1alpha1.TerminationMessage{Reason: v1alpha1.ReasonDeadlineExceeded, Message: msg}
	}
	state := podstatus.Terminated(pod, v1alpha1.DeployerContainerName)
	if pod.Status.Phase == corev1.PodSucceeded {
		m := v1alpha1.TerminationMessage{Reason: v1alpha1.ReasonCompleted}
		if state != nil && strings.TrimSpace(state.Message) != "" {
			if parsed := parseTerminationMessage(state.Message); parsed.Reason != v1alpha1.ReasonFailed {
				m = parsed
			}
		}
		return m
	}
	if state == nil || strings.TrimSpace(state.Message) == "" {
		msg := "the deployer pod failed without a termination message"
		if state != nil {
			msg = fmt.Sprintf("the deployer exited with code %d without a termination message; see `kubectl logs %s`", state.ExitCode, pod.Name)
		} else if pod.Status.Message != "" {
			msg = pod.Status.Message
		}
		return v1alpha1.TerminationMessage{Reason: v1alpha1.ReasonFailed, Message: msg}
	}
	return parseTerminationMessage(state.Message)
}
