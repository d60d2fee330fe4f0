package deployer_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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
	path := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig,
		"STAGEHAND_TERMINATION_MESSAGE_PATH=" + path}, env...)
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	require.NoError(t, cmd.Start())
	return cmd, path
}

func exitCode(t *testing.T, cmd *exec.Cmd) v1alpha1.DeployerExitCode {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return v1alpha1.DeployerExitCode(exit.ExitCode())
	}
	require.NoError(t, err)
	return v1alpha1.ExitComplete
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
		testutil.CreateReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
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
		dc := testutil.DeploymentConfig("web", testutil.TestAppImage, 1, recreateStrategy(60))
		dc.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		}
		dc = testutil.CreateDeploymentConfig(t, stagehand, testutil.Namespace(t, kube), dc)
		testutil.CreateReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))
		cmd, path := startDeployer(t, bin, "STAGEHAND_REVISION=web-1", "STAGEHAND_NAMESPACE="+dc.Namespace)
		time.Sleep(2 * time.Second) // let it reach the wait; a late signal only makes the test weaker
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		signalled := time.Now()
		assert.Equal(t, v1alpha1.ExitCancelled, exitCode(t, cmd))
		assert.Less(t, time.Since(signalled), 3*time.Second, "the deployer stops at once")
		assert.Equal(t, v1alpha1.ReasonCancelled, readMessage(t, path).Reason)
	})
}
