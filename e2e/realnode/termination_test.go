//go:build e2e && realnode

package realnode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// TestRealNodeDeployerTerminationMessageFailsTheRevision fails revision 2 with a pre hook
// whose policy is Abort: the deployer, a real container, exits 3 and writes its reason and
// message to /dev/termination-log, which the kubelet reads back into the pod's status. The
// controller turns that message into the revision's status reason and the DC's
// Progressing condition, and revision 1 keeps serving.
func TestRealNodeDeployerTerminationMessageFailsTheRevision(t *testing.T) {
	requireController(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRecreate)
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	watcher := env.WatchPods(t, s.NS, "web")

	// When revision 2's pre hook fails with Abort
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{
			Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort,
				"echo checking the schema; echo migration failed: table locked >&2; exit 1"),
		}
	}).
		// Then the revision fails, and revision 1 serves with every replica
		Then().RevisionPhase(2, failed).RevisionReplicas(1, 2).RevisionReplicas(2, 0).ReadyPods(2).
		DeploymentConfig("Progressing False with RolloutFailed", func(dc *stagehandv1.DeploymentConfig) bool {
			c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
			return c != nil && c.Reason == stagehandv1.ReasonRolloutFailed && strings.HasPrefix(c.Message, "revision web-2: ")
		})
	pods.LogAll(t)

	// Then the hook's container exited 1, and the deployer's exited 3 with a termination
	// message that the kubelet read from the container
	hooks := pods.Named("web-2-hook-pre")
	require.Len(t, hooks, 1)
	require.NotEmpty(t, hooks[0].Status.ContainerStatuses)
	hookState := hooks[0].Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, hookState, "%+v", hooks[0].Status.ContainerStatuses[0].State)
	assert.Equal(t, int32(1), hookState.ExitCode)

	deployer, err := env.Kube.CoreV1().Pods(s.NS).Get(t.Context(), "web-2-deploy", metav1.GetOptions{})
	require.NoError(t, err, "the failed deployer pod stays for kubectl logs")
	require.NotEmpty(t, deployer.Status.ContainerStatuses)
	st := deployer.Status.ContainerStatuses[0]
	require.NotNil(t, st.State.Terminated, "%+v", st.State)
	term := st.State.Terminated
	t.Logf("web-2-deploy: exit %d, reason %s, containerID %s, termination message %s", term.ExitCode, term.Reason, term.ContainerID, term.Message)
	assert.Equal(t, int32(stagehandv1.ExitHookAborted), term.ExitCode)
	assert.True(t, strings.HasPrefix(term.ContainerID, "containerd://"), "a real container: %s", term.ContainerID)
	require.NotEmpty(t, term.Message, "the deployer wrote /dev/termination-log")
	var msg stagehandv1.TerminationMessage
	require.NoError(t, json.Unmarshal([]byte(term.Message), &msg),
		"the message is the deployer's JSON, not a log tail (FallbackToLogsOnError): %s", term.Message)
	assert.Equal(t, stagehandv1.ReasonHookFailed, msg.Reason)
	assert.Contains(t, msg.Message, "migration failed: table locked", "the message carries the hook's log tail")
	assert.Contains(t, msg.Message, "web-2-hook-pre", "the message names the hook pod")

	// and the revision's status reason and the DC's condition carry that message
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(t.Context(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	reason := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	assert.Equal(t, msg.Reason+": "+strings.TrimSpace(msg.Message), reason, "the status reason is the termination message")
	c := meta.FindStatusCondition(s.Get().Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "revision web-2: "+reason)

	_, mixed := watcher.MaxRevisionsAtOnce()
	for _, m := range mixed {
		assert.Zero(t, m["2"], "revision 2 never gets pods when its pre hook aborts")
	}
	assert.GreaterOrEqual(t, watcher.MinAvailable(), 2, "revision 1 kept serving throughout")
}
