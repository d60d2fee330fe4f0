//go:build e2e

package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

// result is one in-process run of the deployer.
type result struct {
	code   v1alpha1.DeployerExitCode
	msg    v1alpha1.TerminationMessage
	stdout string
}

// deploy runs the deployer in process for revision with --until (may be ""), capturing
// its stdout (progress lines and hook logs).
func deploy(ctx context.Context, t *testing.T, namespace, revision, until string) result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "termination-log")
	cfg := deployer.Config{Revision: revision, Namespace: namespace, TerminationMessagePath: path, Until: until}
	logger := logrus.New()
	logger.SetOutput(t.Output())
	var stdout bytes.Buffer // written only by the Progress, under its lock
	out := strategies.NewProgress(io.MultiWriter(t.Output(), &stdout))
	code := deployer.Execute(ctx, cfg, kube, out, logrus.NewEntry(logger), deployer.BuiltIn)
	var msg v1alpha1.TerminationMessage
	data, err := os.ReadFile(path)
	require.NoError(t, err, "the deployer always writes its termination message")
	require.NoError(t, json.Unmarshal(data, &msg), "termination message %s", data)
	return result{code: v1alpha1.DeployerExitCode(code), msg: msg, stdout: stdout.String()}
}

func deployWithin(t *testing.T, namespace, revision, until string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	return deploy(ctx, t, namespace, revision, until)
}

// recreateWithHooks is a Recreate strategy with the given hooks.
func recreateWithHooks(pre, mid, post *v1alpha1.LifecycleHook) v1alpha1.DeploymentStrategy {
	s := recreateStrategy(30)
	s.RecreateParams.Pre, s.RecreateParams.Mid, s.RecreateParams.Post = pre, mid, post
	return s
}

// appendStage is a hook script that appends stage to $HOOK_FILE and logs a line.
func appendStage(stage string) string {
	return fmt.Sprintf(`echo %s >> "$HOOK_FILE"; echo "%s hook says hello"`, stage, stage)
}

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(data))
}

// hookStarts records, for every hook pod, the pod counts at the moment the watcher first
// saw it: app pods of revision 1 and 2 that may still run (not in a terminal phase: the
// object of a finished pod may stay a moment longer, as Recreate allows), and the Ready
// ones of revision 2.
type hookStarts struct {
	mu   sync.Mutex
	seen map[string]string
	pods map[string]*corev1.Pod
}

func watchHookStarts(t *testing.T, namespace string) *hookStarts {
	h := &hookStarts{seen: map[string]string{}, pods: map[string]*corev1.Pod{}}
	recordPods(t, kube, namespace, func(pods []*corev1.Pod) {
		h.mu.Lock()
		defer h.mu.Unlock()
		old, current, ready := 0, 0, 0
		for _, pod := range pods {
			if pod.Labels[v1alpha1.HookStageLabel] != "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			switch pod.Labels[v1alpha1.RevisionLabel] {
			case "1":
				old++
			case "2":
				current++
				if podAvailable(pod) {
					ready++
				}
			}
		}
		for _, pod := range pods {
			if pod.Labels[v1alpha1.HookStageLabel] == "" {
				continue
			}
			if _, ok := h.seen[pod.Name]; !ok {
				h.seen[pod.Name] = fmt.Sprintf("old=%d new=%d ready=%d", old, current, ready)
				h.pods[pod.Name] = pod.DeepCopy()
			}
		}
	})
	return h
}

func (h *hookStarts) at(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[name]
}

func (h *hookStarts) pod(name string) *corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pods[name]
}

func TestRecreateRunsPreMidAndPostHooks(t *testing.T) {
	requireCluster(t)
	file := filepath.Join(t.TempDir(), "order")
	env := corev1.EnvVar{Name: "HOOK_FILE", Value: file}
	abort := v1alpha1.LifecycleHookFailurePolicyAbort
	dc := setup(t, testutil.SimulatedImage, 3, recreateWithHooks(
		shellHook(abort, appendStage("pre"), env),
		shellHook(abort, appendStage("mid"), env),
		shellHook(abort, appendStage("post"), env)))
	runningRevision(t, dc, 1, 3)
	starts := watchHookStarts(t, dc.Namespace)
	createReplicaSet(t, kube, testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning))

	r := deployWithin(t, dc.Namespace, "web-2", "")

	require.Equal(t, v1alpha1.ExitComplete, r.code, "message: %+v", r.msg)
	assert.Equal(t, []string{"pre", "mid", "post"}, fileLines(t, file), "each hook ran once, in order")
	assert.Equal(t, "old=3 new=0 ready=0", starts.at("web-2-hook-pre"), "pre runs before anything is scaled")
	assert.Equal(t, "old=0 new=0 ready=0", starts.at("web-2-hook-mid"), "mid runs between the old and the new pods")
	assert.Equal(t, "old=0 new=3 ready=3", starts.at("web-2-hook-post"), "post runs once every new pod is ready")
	for _, stage := range []string{"pre", "mid", "post"} {
		assert.Contains(t, r.stdout, fmt.Sprintf("--> %s hook web-2-hook-%s: running", stage, stage))
		assert.Contains(t, r.stdout, fmt.Sprintf("--> %s hook web-2-hook-%s: succeeded", stage, stage))
		assert.Contains(t, r.stdout, fmt.Sprintf("%s: %s hook says hello", stage, stage), "the hook's log is streamed")
	}
	assert.Len(t, eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookStarted), 3)
	assert.Len(t, eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookSucceeded), 3)
	assert.Empty(t, hookPods(t, kube, dc.Namespace), "succeeded hook pods are deleted once the revision completes")
}

func TestAbortHookFailsTheRollout(t *testing.T) {
	requireCluster(t)
	dc := setup(t, testutil.SimulatedImage, 2, recreateWithHooks(
		shellHook(v1alpha1.LifecycleHookFailurePolicyAbort, `echo "checking the schema"; echo "migration 42 broke"; exit 1`), nil, nil))
	runningRevision(t, dc, 1, 2)
	var mu sync.Mutex
	newPods := 0
	recordPods(t, kube, dc.Namespace, func(pods []*corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		for _, pod := range pods {
			if pod.Labels[v1alpha1.RevisionLabel] == "2" && pod.Labels[v1alpha1.HookStageLabel] == "" {
				newPods++
			}
		}
	})
	createReplicaSet(t, kube, testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning))

	r := deployWithin(t, dc.Namespace, "web-2", "")

	assert.Equal(t, v1alpha1.ExitHookAborted, r.code)
	assert.Equal(t, v1alpha1.ReasonHookFailed, r.msg.Reason)
	assert.Contains(t, r.msg.Message, "web-2-hook-pre")
	assert.Contains(t, r.msg.Message, "exit code 1")
	assert.Contains(t, r.msg.Message, "checking the schema\nmigration 42 broke", "the log tail")
	assert.Contains(t, r.stdout, "--> pre hook web-2-hook-pre: failed (exit 1)")
	mu.Lock()
	assert.Zero(t, newPods, "the new revision never got pods")
	mu.Unlock()
	assert.Equal(t, 2, availablePods(t, dc.Namespace, "1"), "the previous revision still serves")
	failed := hookPods(t, kube, dc.Namespace)
	require.Len(t, failed, 1, "the failed hook pod is kept for inspection")
	assert.Equal(t, corev1.PodFailed, failed[0].Status.Phase)
	warnings := eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookFailed)
	require.Len(t, warnings, 1)
	assert.Equal(t, corev1.EventTypeWarning, warnings[0].Type)
	assert.Equal(t, "DeploymentConfig", warnings[0].InvolvedObject.Kind)
	assert.Equal(t, "web", warnings[0].InvolvedObject.Name)
}

// counter is a hook script that counts its runs in $COUNTER and fails the first fails runs.
func counter(fails int) string {
	return fmt.Sprintf(`n=$(cat "$COUNTER" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNTER"; echo "attempt $n"; [ $n -gt %d ]`, fails)
}

func TestRetryHook(t *testing.T) {
	requireCluster(t)
	t.Run("succeeds on the third attempt", func(t *testing.T) {
		env := corev1.EnvVar{Name: "COUNTER", Value: filepath.Join(t.TempDir(), "n")}
		dc := setup(t, testutil.SimulatedImage, 1, recreateWithHooks(retryHook(counter(2), 3, 1, env), nil, nil))
		createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

		r := deployWithin(t, dc.Namespace, "web-1", "")

		require.Equal(t, v1alpha1.ExitComplete, r.code, "message: %+v", r.msg)
		started := eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookStarted)
		var messages []string
		for _, ev := range started {
			messages = append(messages, ev.Message)
		}
		assert.ElementsMatch(t, []string{
			"pre hook web-1-hook-pre (attempt 1 of 3) started",
			"pre hook web-1-hook-pre-2 (attempt 2 of 3) started",
			"pre hook web-1-hook-pre-3 (attempt 3 of 3) started",
		}, messages)
		assert.Len(t, eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookFailed), 2)
		assert.Contains(t, r.stdout, "--> pre hook web-1-hook-pre: failed (exit 1), retrying in 1s (attempt 2 of 3)")
		assert.Equal(t, 1, availablePods(t, dc.Namespace, "1"))
		remaining := hookPods(t, kube, dc.Namespace)
		assert.Len(t, remaining, 2, "the failed attempts stay, the succeeded one is deleted")
	})
	t.Run("gives up after maxAttempts", func(t *testing.T) {
		env := corev1.EnvVar{Name: "COUNTER", Value: filepath.Join(t.TempDir(), "n")}
		dc := setup(t, testutil.SimulatedImage, 1, recreateWithHooks(retryHook(counter(2), 2, 1, env), nil, nil))
		createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

		r := deployWithin(t, dc.Namespace, "web-1", "")

		assert.Equal(t, v1alpha1.ExitHookAborted, r.code)
		assert.Equal(t, v1alpha1.ReasonHookFailed, r.msg.Reason)
		assert.Contains(t, r.msg.Message, "web-1-hook-pre-2")
		assert.Contains(t, r.msg.Message, "after 2 attempts")
		assert.Contains(t, r.msg.Message, "attempt 2")
		assert.Equal(t, 0, availablePods(t, dc.Namespace, "1"))
	})
}

func TestIgnoreHookLetsTheRolloutGoOn(t *testing.T) {
	requireCluster(t)
	dc := setup(t, testutil.SimulatedImage, 2, recreateWithHooks(nil, nil,
		shellHook(v1alpha1.LifecycleHookFailurePolicyIgnore, `echo "cannot reach the chat"; exit 7`)))
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	r := deployWithin(t, dc.Namespace, "web-1", "")

	require.Equal(t, v1alpha1.ExitComplete, r.code, "message: %+v", r.msg)
	assert.Contains(t, r.stdout, "--> post hook web-1-hook-post: failed (exit 7), ignored (failurePolicy Ignore)")
	warnings := eventsWithReason(t, kube, dc.Namespace, v1alpha1.EventHookFailed)
	require.Len(t, warnings, 1)
	assert.Equal(t, corev1.EventTypeWarning, warnings[0].Type)
	assert.Contains(t, warnings[0].Message, "exit 7")
	assert.Equal(t, 2, availablePods(t, dc.Namespace, "1"))
}

func TestFailingPostHookWithAbortFailsTheRevision(t *testing.T) {
	requireCluster(t)
	dc := setup(t, testutil.SimulatedImage, 2, recreateWithHooks(nil, nil,
		shellHook(v1alpha1.LifecycleHookFailurePolicyAbort, `echo "cache warm-up failed"; exit 2`)))
	createReplicaSet(t, kube, testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseRunning))

	r := deployWithin(t, dc.Namespace, "web-1", "")

	assert.Equal(t, v1alpha1.ExitHookAborted, r.code)
	assert.Contains(t, r.msg.Message, "web-1-hook-post failed with exit code 2")
	assert.Contains(t, r.msg.Message, "cache warm-up failed")
	assert.Equal(t, 2, availablePods(t, dc.Namespace, "1"), "post runs after the new pods serve; the controller rolls back")
}
