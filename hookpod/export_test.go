package hookpod

import (
	"time"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// NewExecutorWithGrace is NewExecutor with a grace of its own for stuck pods, so that tests
// need not wait the real one.
func NewExecutorWithGrace(pods corev1client.PodInterface, out Printer, grace podstatus.StuckGrace) HookExecutor {
	return &hookExecutor{pods: pods, out: out, grace: grace, now: time.Now}
}
