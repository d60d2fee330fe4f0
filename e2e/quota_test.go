//go:build e2e

package e2e

// Namespaces with a ResourceQuota (DESIGN.md §4 invariant 7, §5): a quota that requires
// requests and limits admits every pod Stagehand makes for itself, and a quota that is
// full delays a rollout, naming the quota, without failing it.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// createQuota creates a ResourceQuota and waits until the quota controller has computed
// its status: before that, its admission refuses every pod of the namespace.
func createQuota(t *testing.T, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		q, err := env.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) == len(hard)
	}, podTimeout, 100*time.Millisecond, "the quota controller to compute quota %s", name)
}

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// A quota that is full refuses the deployer pod with "exceeded quota": the revision waits
// (New, never Failed), the DC's Progressing condition names the quota, and kubectl
// stagehand get says what the deployer waits for. When the quota has room, the rollout
// goes on by itself and completes.
func TestFullQuotaDelaysARolloutAndNamesTheQuota(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	createQuota(t, s.NS, "tight", quantities("pods", "0"))

	s.When().Created().Then().DeploymentConfig("waiting for quota tight", func(dc *stagehandv1.DeploymentConfig) bool {
		c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
		return c != nil && c.Reason == stagehandv1.ReasonDeployerPodWaiting
	})
	got, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status, "waiting is not failing")
	assert.Contains(t, c.Message, "revision web-1 is waiting")
	assert.Contains(t, c.Message, "exceeded quota: tight")
	t.Logf("Progressing: %s: %s", c.Reason, c.Message)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(stagehandv1.RevisionPhaseNew), rs.Annotations[stagehandv1.PhaseAnnotation])
	tree := plugin(t, s.NS, "get", "dc/web", "--ascii")
	assert.Contains(t, tree.Stdout, "Not created yet")
	assert.Contains(t, tree.Stdout, "exceeded quota: tight", "get says what the deployer waits for:\n%s", tree.Stdout)

	// Some seconds of refusals later, the quota gets room: the rollout goes on by itself.
	time.Sleep(3 * time.Second)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := env.Kube.CoreV1().ResourceQuotas(s.NS).Get(ctx, "tight", metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Hard = quantities("pods", "10")
		_, err = env.Kube.CoreV1().ResourceQuotas(s.NS).Update(ctx, q, metav1.UpdateOptions{})
		return err
	}))
	// Complete is terminal and phases only move forward: the revision never failed.
	s.When().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete).ReadyPods(1)
	rs, err = env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, rs.Annotations, stagehandv1.WaitingAnnotation, "the wait is over")
	warnings := strings.Join(warningEvents(t, s.NS), "\n")
	assert.Contains(t, warnings, "exceeded quota: tight", "the refusal was an event too")
}
