//go:build e2e

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// leaderRSS is the resident memory, in KiB, of the leader controller's process, read
// from /proc, and the pod it runs in.
func leaderRSS(ctx context.Context) (int64, string, error) {
	identity, err := waitForHolder(ctx, "", time.Minute)
	if err != nil {
		return 0, "", err
	}
	pod, _, _ := strings.Cut(identity, "_")
	for _, pid := range env.PodProcesses(framework.ControllerNamespace, pod, "stagehand-controller") {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, pod, err
		}
		scanner := bufio.NewScanner(bytes.NewReader(status))
		for scanner.Scan() {
			if rest, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
				kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				return kib, pod, err
			}
		}
	}
	return 0, pod, fmt.Errorf("no process of the leader pod %s", pod)
}
