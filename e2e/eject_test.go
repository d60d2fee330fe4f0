//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// deploymentOwnsWebPods asserts that the app=web pods are exactly uids, each controlled by
// a ReplicaSet that deployment/web controls, and returns that ReplicaSet's name.
func deploymentOwnsWebPods(t *testing.T, ns string, uids []string) string {
	t.Helper()
	ctx := context.Background()
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items)
	ref := metav1.GetControllerOfNoCopy(&pods.Items[0])
	require.NotNil(t, ref, pods.Items[0].Name)
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	require.NoError(t, err)
	if rsRef := metav1.GetControllerOfNoCopy(rs); assert.NotNil(t, rsRef, rs.Name) {
		assert.Equal(t, d.UID, rsRef.UID, "%s belongs to deployment/web", rs.Name)
	}
	webPodsOwnedBy(t, ns, rs.Name, uids)
	return rs.Name
}

// adopt, eject, adopt: the same pods all along, and the ejected Deployment selects and
// labels them like any Deployment (no stagehand.dev label).
func TestAdoptEjectAdoptKeepsThePods(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	uids := givenRunningDeployment(t, ns, webDeployment(2))
	pluginOK(t, ns, "adopt", "deployment/web", "--timeout=60s")

	pluginOK(t, ns, "eject", "dc/web", "--timeout=60s")

	d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, d.Spec.Selector, "the DC's selector, nothing of stagehand.dev")
	for k := range d.Spec.Template.Labels {
		assert.False(t, strings.HasPrefix(k, stagehandv1.GroupName), "template label %s", k)
	}
	deploymentOwnsWebPods(t, ns, uids)

	out := pluginOK(t, ns, "adopt", "deployment/web", "--timeout=30s")
	assert.Contains(t, out.Stderr, "labelled 2 pods as revision 1")
	webPodsOwnedBy(t, ns, "web-1", uids)
}

// eject refuses a DeploymentConfig that an HPA scales, changing nothing; with
// --retarget-hpa the HPA goes back to the Deployment.
func TestEjectRefusesAndRetargetsHPAs(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	uids := givenRunningDeployment(t, ns, webDeployment(2))
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 4,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	_, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
	require.NoError(t, err)
	pluginOK(t, ns, "adopt", "deployment/web", "--retarget-hpa", "--timeout=60s")

	r := plugin(t, ns, "eject", "dc/web", "--timeout=30s")

	assert.NotZero(t, r.ExitCode, "%s", r)
	assert.Contains(t, r.Stderr, "HorizontalPodAutoscaler web scales deploymentconfig web: eject with --retarget-hpa")
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err, "the DeploymentConfig is left alone")
	_, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no Deployment was created")

	pluginOK(t, ns, "eject", "dc/web", "--retarget-hpa", "--timeout=60s")

	got, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, got.Spec.ScaleTargetRef)
	deploymentOwnsWebPods(t, ns, uids)
}

// A DeploymentConfig whose selector has matchExpressions is ejected with its pods, the
// Deployment keeping that selector.
func TestEjectWithMatchExpressions(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && dc.Status.LatestVersion == 1 && dc.Status.Phase == stagehandv1.RevisionPhaseComplete
	}, framework.RolloutTimeout, 200*time.Millisecond, "revision 1 Complete")
	uids := waitReadyWeb(t, ns, 2, "")

	r := plugin(t, ns, "eject", "dc/web", "--timeout=30s")

	require.Zero(t, r.ExitCode, "%s", r)
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, dc.Spec.Selector, d.Spec.Selector)
	assert.False(t, d.Spec.Paused)
	deploymentOwnsWebPods(t, ns, uids)
}
