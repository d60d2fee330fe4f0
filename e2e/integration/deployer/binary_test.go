//go:build e2e

package deployer_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

// buildDeployer builds cmd/stagehand-deployer into a temporary folder.
func buildDeployer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stagehand-deployer")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/stagehand-deployer")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startDeployer starts the binary with the contract's environment (OpenShift names for
// the revision, to cover the fallback) and returns it with its termination-message path.
func startDeployer(t *testing.T, bin string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	return startDeployerTo(t, bin, t.Output(), env...)
}

// startDeployerTo is startDeployer with the deployer's stdout (its progress lines) going
// to stdout.
func startDeployerTo(t *testing.T, bin string, stdout io.Writer, env ...string) (*exec.Cmd, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig,
		"STAGEHAND_TERMINATION_MESSAGE_PATH=" + path}, env...)
	cmd.Stdout, cmd.Stderr = stdout, t.Output()
	require.NoError(t, cmd.Start())
	return cmd, path
}

func exitCode(t *testing.T, cmd *exec.Cmd) v1alpha1.DeployerExitCode {
	t.Helper()
	return exitCodeOf(t, cmd.Wait())
}

// exitCodeOf is the exit code that the error of cmd.Wait reports.
func exitCodeOf(t *testing.T, err error) v1alpha1.DeployerExitCode {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return v1alpha1.DeployerExitCode(exit.ExitCode())
	}
	require.NoError(t, err)
	return v1alpha1.ExitComplete
}

// outputWatch passes the output of a process on to w, and closes seen once the output
// contains want.
type outputWatch struct {
	w    io.Writer
	want string
	seen chan struct{}

	mu    sync.Mutex
	text  strings.Builder
	found bool
}

func newOutputWatch(w io.Writer, want string) *outputWatch {
	return &outputWatch{w: w, want: want, seen: make(chan struct{})}
}

func (o *outputWatch) Write(p []byte) (int, error) {
	o.mu.Lock()
	if !o.found {
		o.text.Write(p)
		if strings.Contains(o.text.String(), o.want) {
			o.found = true
			close(o.seen)
		}
	}
	o.mu.Unlock()
	return o.w.Write(p)
}

func readMessage(t *testing.T, path string) v1alpha1.TerminationMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err, "the deployer always writes its termination message")
	var msg v1alpha1.TerminationMessage
	require.NoError(t, json.Unmarshal(data, &msg), "%s", data)
	return msg
}

func TestBinaryExitCodesAndTerminationMessage(t *testing.T) {
	requireCluster(t)
	bin := buildDeployer(t)

	t.Run("complete", func(t *testing.T) {
		dc := setup(t, testutil.SimulatedImage, 2, recreateStrategy(30))
		createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
		cmd, path := startDeployer(t, bin, "OPENSHIFT_DEPLOYMENT_NAME=web-1", "OPENSHIFT_DEPLOYMENT_NAMESPACE="+dc.Namespace,
			"STAGEHAND_LOG_FORMAT=json")
		assert.Equal(t, v1alpha1.ExitComplete, exitCode(t, cmd))
		msg := readMessage(t, path)
		assert.Equal(t, v1alpha1.ReasonCompleted, msg.Reason)
		assert.Contains(t, msg.Message, "web-1")
	})
	t.Run("no revision is invalid input", func(t *testing.T) {
		cmd, path := startDeployer(t, bin)
		assert.Equal(t, v1alpha1.ExitInvalid, exitCode(t, cmd))
		msg := readMessage(t, path)
		assert.Equal(t, v1alpha1.ReasonInvalidConfig, msg.Reason)
		assert.Contains(t, msg.Message, v1alpha1.EnvRevision)
	})
	t.Run("SIGTERM cancels at once", func(t *testing.T) {
		dc := testutil.DeploymentConfig("web", testAppImage, 1, recreateStrategy(60))
		dc.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		}
		dc = createDeploymentConfig(t, stagehand, framework.CreateNamespace(t, kube), dc)
		createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
		// The pod never becomes ready, so the deployer waits for it until the 60s timeout
		// unless SIGTERM stops the wait: only then does it exit Cancelled.
		waiting := newOutputWatch(t.Output(), "Waiting for 1 pods of web-1 to be available")
		cmd, path := startDeployerTo(t, bin, waiting, "STAGEHAND_REVISION=web-1", "STAGEHAND_NAMESPACE="+dc.Namespace)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-waiting.seen:
		case err := <-exited:
			t.Fatalf("the deployer exited (%v) before it waited for the pods of web-1", err)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		signalled := time.Now()
		code := exitCodeOf(t, <-exited)
		t.Logf("the deployer exited %s after SIGTERM", time.Since(signalled))
		assert.Equal(t, v1alpha1.ExitCancelled, code, "SIGTERM during the wait stops it; the timeout (exit %d) must not", v1alpha1.ExitTimedOut)
		msg := readMessage(t, path)
		assert.Equal(t, v1alpha1.ReasonCancelled, msg.Reason, "message: %s", msg.Message)
	})
}
