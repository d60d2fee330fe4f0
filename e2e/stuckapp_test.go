//go:build e2e

package e2e

// Application pods that cannot start fail their rollout fast: a new revision whose
// template's env names a ConfigMap key that does not exist fails once its first pod has
// waited the 30 s grace of a config error, with the kubelet's waiting reason as the
// revision's reason, not after the strategy's timeoutSeconds. The previous revision
// then serves again.

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
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// stuckAppTimeout bounds the wait for the failure: the 30 s grace of a config error, plus
// the scaling and the controller's reaction. The strategy's timeoutSeconds (600) is far
// beyond it, so only the stuck-pod detection can make the revision fail in time.
const stuckAppTimeout = 90 * time.Second

// waitingConfigError is the kubelet's waiting reason for a missing ConfigMap key.
const waitingConfigError = "CreateContainerConfigError"

func TestStuckAppPodWithAMissingConfigMapKeyFailsTheRolloutWithItsWaitingReason(t *testing.T) {
	requireController(t)
	for _, strategy := range []stagehandv1.DeploymentStrategyType{stagehandv1.DeploymentStrategyTypeRolling, stagehandv1.DeploymentStrategyTypeRecreate} {
		t.Run(string(strategy), func(t *testing.T) {
			dc := framework.NewDeploymentConfig("web", 2, strategy)
			switch strategy {
			case stagehandv1.DeploymentStrategyTypeRolling:
				dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](600)}
			case stagehandv1.DeploymentStrategyTypeRecreate:
				dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{TimeoutSeconds: ptr.To[int64](600)}
			}

			// Given revision 1 serves, and a ConfigMap without the key db-url
			s := env.Given(t).DeploymentConfig(dc)
			_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Create(context.Background(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"other": "x"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

			// When revision 2's template refers to that key
			start := time.Now()
			s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
				framework.SetVersion(dc, 2)
				c := &dc.Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env, corev1.EnvVar{Name: "DB_URL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "db-url"}}})
			})

			// Then revision 2 fails long before its timeoutSeconds
			env.WaitForRevision(t, s.NS, "web", 2, stuckAppTimeout, "phase Failed", func(a map[string]string, _ int32) bool {
				return a[stagehandv1.PhaseAnnotation] == string(failed)
			})
			t.Logf("revision 2 failed %s after the change (grace 30 s, timeoutSeconds 600)", time.Since(start).Round(time.Second))

			// With the waiting reason as its reason, and the pod and the missing key in its message
			missing := "couldn't find key db-url in ConfigMap " + s.NS + "/settings"
			rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
			require.NoError(t, err)
			t.Logf("status-reason: %s", rs.Annotations[stagehandv1.StatusReasonAnnotation])
			reason, message, _ := strings.Cut(rs.Annotations[stagehandv1.StatusReasonAnnotation], ": ")
			assert.Equal(t, waitingConfigError, reason, "the revision's reason is the waiting reason, not %s", stagehandv1.ReasonTimedOut)
			assert.Contains(t, message, "pod web-2-", "the message names the pod")
			assert.Contains(t, message, `container "app" cannot start: `+waitingConfigError+": "+missing)

			// And the DeploymentConfig's condition and Warning event say so
			s.Then().DeploymentConfig("Progressing RolloutFailed names the waiting reason", func(dc *stagehandv1.DeploymentConfig) bool {
				c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
				return c != nil && c.Reason == stagehandv1.ReasonRolloutFailed && strings.Contains(c.Message, waitingConfigError+": ") &&
					strings.Contains(c.Message, missing)
			})
			assert.True(t, containsAny(eventsWithReason(t, s.NS, stagehandv1.EventRolloutFailed), "web-2 failed: "+waitingConfigError+": "),
				"a RolloutFailed event names the waiting reason")

			// And revision 1 serves again, with every replica
			s.Then().RevisionReplicas(2, 0).RevisionReplicas(1, 2).ReadyPods(2)
		})
	}
}
