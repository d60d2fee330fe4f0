//go:build e2e

package deployer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

// run runs the deployer in process for revision and returns its exit code and the
// termination message it wrote.
func run(t *testing.T, namespace, revision string) (v1alpha1.DeployerExitCode, v1alpha1.TerminationMessage) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "termination-log")
	cfg := deployer.Config{Revision: revision, Namespace: namespace, TerminationMessagePath: path}
	logger := logrus.New()
	logger.SetOutput(t.Output())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	code := deployer.Execute(ctx, cfg, kube, strategies.NewProgress(t.Output()), logrus.NewEntry(logger), deployer.BuiltIn)
	var msg v1alpha1.TerminationMessage
	data, err := os.ReadFile(path)
	require.NoError(t, err, "the deployer always writes its termination message")
	require.NoError(t, json.Unmarshal(data, &msg), "termination message %s", data)
	return v1alpha1.DeployerExitCode(code), msg
}

// setup creates the DeploymentConfig and returns it with its namespace.
func setup(t *testing.T, image string, replicas int32, strategy v1alpha1.DeploymentStrategy) *v1alpha1.DeploymentConfig {
	t.Helper()
	requireCluster(t)
	ns := framework.CreateNamespace(t, kube)
	dc := testutil.DeploymentConfig("web", image, replicas, strategy)
	return createDeploymentConfig(t, stagehand, ns, dc)
}

// availablePods counts the Ready, non-terminating pods of revision n.
func availablePods(t *testing.T, namespace string, n string) int {
	t.Helper()
	pods, err := kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.RevisionLabel + "=" + n})
	require.NoError(t, err)
	count := 0
	for i := range pods.Items {
		if podAvailable(&pods.Items[i]) {
			count++
		}
	}
	return count
}

// runningRevision creates revision n of dc Complete with replicas available pods.
func runningRevision(t *testing.T, dc *v1alpha1.DeploymentConfig, n int64, replicas int32) {
	t.Helper()
	createReplicaSet(t, kube, testutil.Revision(dc, n, replicas, v1alpha1.RevisionPhaseComplete))
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return availablePods(t, dc.Namespace, strconv.FormatInt(n, 10)) == int(replicas), nil
	})
	require.NoError(t, err, "revision %d never had %d ready pods", n, replicas)
}

func recreateStrategy(timeout int64) v1alpha1.DeploymentStrategy {
	return v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
		RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: &timeout}}
}

func TestRecreateFirstRevision(t *testing.T) {
	dc := setup(t, testutil.SimulatedImage, 4, recreateStrategy(30))
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	code, msg := run(t, dc.Namespace, "web-1")

	assert.Equal(t, v1alpha1.ExitComplete, code, "message: %+v", msg)
	assert.Equal(t, v1alpha1.ReasonCompleted, msg.Reason)
	assert.Equal(t, 4, availablePods(t, dc.Namespace, "1"))
}

func TestRecreateNeverRunsOldAndNewPodsAtOnce(t *testing.T) {
	dc := setup(t, testutil.SimulatedImage, 3, recreateStrategy(30))
	runningRevision(t, dc, 1, 3)
	var (
		mu    sync.Mutex
		mixed []string
	)
	recordPods(t, kube, dc.Namespace, func(pods []*corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		// A pod runs until its phase is Succeeded or Failed; the object of a finished pod
		// may stay a moment longer, as Recreate (like the Deployment controller's) allows.
		perRevision := map[string]int{}
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				perRevision[pod.Labels[v1alpha1.RevisionLabel]]++
			}
		}
		if perRevision["1"] > 0 && perRevision["2"] > 0 {
			mixed = append(mixed, fmt.Sprintf("revision 1: %d pods, revision 2: %d pods", perRevision["1"], perRevision["2"]))
		}
	})
	createReplicaSet(t, kube, testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning))

	code, msg := run(t, dc.Namespace, "web-2")

	require.Equal(t, v1alpha1.ExitComplete, code, "message: %+v", msg)
	mu.Lock()
	assert.Empty(t, mixed, "old and new pods ran at once")
	mu.Unlock()
	assert.Equal(t, 3, availablePods(t, dc.Namespace, "2"))
	old, err := kube.AppsV1().ReplicaSets(dc.Namespace).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(0), *old.Spec.Replicas)
}

func TestRollingKeepsAvailablePods(t *testing.T) {
	one := intstr.FromInt32(1)
	timeout := int64(30)
	dc := setup(t, testAppImage, 4, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
		RollingParams: &v1alpha1.RollingDeploymentStrategyParams{MaxSurge: &one, MaxUnavailable: &one, TimeoutSeconds: &timeout}})
	runningRevision(t, dc, 1, 4)
	var mu sync.Mutex
	lowest, sawNew := 4, false
	recordPods(t, kube, dc.Namespace, func(pods []*corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		available := 0
		for _, pod := range pods {
			if podAvailable(pod) {
				available++
				sawNew = sawNew || pod.Labels[v1alpha1.RevisionLabel] == "2"
			}
		}
		lowest = min(lowest, available)
	})
	createReplicaSet(t, kube, testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning))

	code, msg := run(t, dc.Namespace, "web-2")

	require.Equal(t, v1alpha1.ExitComplete, code, "message: %+v", msg)
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, sawNew, "the watcher saw the new pods")
	assert.GreaterOrEqual(t, lowest, 3, "available pods fell below desired − maxUnavailable")
	assert.Equal(t, 4, availablePods(t, dc.Namespace, "2"))
	assert.Equal(t, 0, availablePods(t, dc.Namespace, "1"))
}

func TestTimeoutWhenPodsNeverBecomeReady(t *testing.T) {
	dc := testutil.DeploymentConfig("web", testAppImage, 2, recreateStrategy(3))
	dc.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1,
	}
	requireCluster(t)
	dc = createDeploymentConfig(t, stagehand, framework.CreateNamespace(t, kube), dc)
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	began := time.Now()
	code, msg := run(t, dc.Namespace, "web-1")

	assert.Equal(t, v1alpha1.ExitTimedOut, code)
	assert.Equal(t, v1alpha1.ReasonTimedOut, msg.Reason)
	assert.Contains(t, msg.Message, "web-1")
	assert.Contains(t, msg.Message, "2 pods to be available")
	assert.Contains(t, msg.Message, "0 of 2 available")
	t.Logf("timed out after %s", time.Since(began).Round(time.Millisecond))
}

func TestBadSnapshotIsInvalidInput(t *testing.T) {
	dc := setup(t, testutil.SimulatedImage, 1, recreateStrategy(30))
	rs := testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning)
	rs.Annotations[v1alpha1.ConfigSnapshotAnnotation] = "{not json"
	createReplicaSet(t, kube, rs)

	code, msg := run(t, dc.Namespace, "web-1")

	assert.Equal(t, v1alpha1.ExitInvalid, code)
	assert.Equal(t, v1alpha1.ReasonInvalidConfig, msg.Reason)
	assert.Contains(t, msg.Message, v1alpha1.ConfigSnapshotAnnotation)

	code, msg = run(t, dc.Namespace, "web-9")
	assert.Equal(t, v1alpha1.ExitInvalid, code, "a missing ReplicaSet")
	assert.Contains(t, msg.Message, "does not exist")
}

func TestRunningTwiceConverges(t *testing.T) {
	dc := setup(t, testutil.SimulatedImage, 3, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	code, msg := run(t, dc.Namespace, "web-1")
	require.Equal(t, v1alpha1.ExitComplete, code, "first run: %+v", msg)
	code, msg = run(t, dc.Namespace, "web-1")

	assert.Equal(t, v1alpha1.ExitComplete, code, "second run: %+v", msg)
	assert.Equal(t, 3, availablePods(t, dc.Namespace, "1"))
}
