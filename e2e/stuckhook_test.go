//go:build e2e

package e2e

// A hook pod that cannot start fails fast: a hook whose env names a ConfigMap key that
// does not exist fails its revision after a short grace, not after the strategy's
// activeDeadlineSeconds, with a message naming the key, and its pod stays for inspection.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// stuckHookTimeout bounds the wait for the failure: the 30 s grace of a config error, plus
// the deployer's start and the controller's reaction. The 6-hour default deadline is far
// beyond it, so only the stuck-pod detection can make the revision fail in time.
const stuckHookTimeout = 90 * time.Second

func TestStuckHookWithAMissingConfigMapKeyFailsTheRevisionAndKeepsThePod(t *testing.T) {
	requireController(t)
	hook := framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo the hook must not run; exit 0")
	hook.ExecNewPod.Env = []corev1.EnvVar{{Name: "DB_URL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "db-url"}}}}
	dc := recreateWithHooks("web", 1, hook, nil, nil)

	// Given a ConfigMap without the key the pre hook's env refers to
	s := env.Given(t).DeploymentConfig(dc)
	_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"other": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// When the DeploymentConfig is created
	s.When().Created()

	// Then revision 1 fails, long before the strategy's activeDeadlineSeconds
	env.WaitForRevision(t, s.NS, "web", 1, stuckHookTimeout, "phase Failed", func(a map[string]string, _ int32) bool {
		return a[stagehandv1.PhaseAnnotation] == string(failed)
	})
	missing := "couldn't find key db-url in ConfigMap " + s.NS + "/settings"
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	reason := rs.Annotations[stagehandv1.StatusReasonAnnotation]
	assert.Contains(t, reason, stagehandv1.ReasonHookFailed)
	assert.Contains(t, reason, missing, "the revision's status-reason names the missing key")
	assert.Contains(t, reason, "web-1-hook-pre", "and the hook pod")

	// And the DeploymentConfig's Progressing condition says why
	s.Then().DeploymentConfig("Progressing names the missing key", func(dc *stagehandv1.DeploymentConfig) bool {
		c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
		return c != nil && strings.Contains(c.Message, missing)
	})

	// And the hook pod is kept for inspection, and never ran
	pod, err := env.Kube.CoreV1().Pods(s.NS).Get(context.Background(), "web-1-hook-pre", metav1.GetOptions{})
	require.NoError(t, err, "the stuck hook pod is kept")
	require.NotNil(t, pod.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, int64(1), *pod.Spec.ActiveDeadlineSeconds, "and stopped: it never runs the hook late")
	for _, c := range pod.Status.ContainerStatuses {
		assert.Nil(t, c.State.Running, "the hook container never ran")
		if term := c.State.Terminated; term != nil {
			assert.NotEqual(t, "Completed", term.Reason, "the hook container never ran")
		}
	}
	assert.False(t, containsAny(eventsWithReason(t, s.NS, stagehandv1.EventHookSucceeded), "web-1-hook-pre"))
}
