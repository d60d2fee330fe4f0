package deferstep

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// ExitNote says how a step pod's container ended, for a message that names the pod:
// " (exit code 137, OOMKilled)", or " (exit code 1)" without a reason. It is "" while the
// container has not terminated.
func ExitNote(sp *corev1.Pod) string {
	t := podstatus.Terminated(sp, "")
	if t == nil {
		return ""
	}
	msg := fmt.Sprintf(" (exit code %d", t.ExitCode)
	if t.Reason != "" {
		msg += ", " + t.Reason
	}
	return msg + ")"
}
