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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// adopt refuses, naming the reason and changing nothing: a Deployment mid-rollout, one an
// HPA scales (unless --retarget-hpa, which then points the HPA at the DeploymentConfig),
// and a user who lacks a permission a step needs.
func TestAdoptRefusesAndRetargetsHPAs(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, webDeployment(2), metav1.CreateOptions{})
	require.NoError(t, err)
	env.WaitForPods(t, ns, "app=web", 2*time.Minute, "2 ready", func(pods []*corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			if framework.PodReady(p) {
				n++
			}
		}
		return n == 2
	})
	unchanged := func() {
		t.Helper()
		_, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		assert.NoError(t, err, "the Deployment is left alone")
		_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no DeploymentConfig was created")
	}

	// A user who may only read
	bindClusterRole(t, ns, "vic", "view")
	r := plugin(t, ns, "--as=vic", "adopt", "deployment/web")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "adopt needs create on deploymentconfigs in namespace "+ns+", which you lack; nothing was changed")
	unchanged()

	// An HPA
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 4,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	_, err = env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
	require.NoError(t, err)
	r = plugin(t, ns, "adopt", "deployment/web")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "HorizontalPodAutoscaler web scales deployment web: adopt with --retarget-hpa")
	unchanged()

	// Mid-rollout: revision 2's pods never become ready
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
		d.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 1"}}}}
		_, err = env.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	}))
	require.Eventually(t, func() bool {
		r = plugin(t, ns, "adopt", "deployment/web", "--retarget-hpa")
		return r.ExitCode != 0 && strings.Contains(r.Stderr, "is mid-rollout: 2 of its ReplicaSets have pods")
	}, time.Minute, time.Second, "last: %s", r)
	unchanged()

	// Once the Deployment is back on one ReplicaSet, --retarget-hpa adopts it and points the HPA at the DC
	// (the HPA and the Deployment controller write it too: retried on a conflict)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template = webDeployment(2).Spec.Template
		_, err = env.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	}))
	require.Eventually(t, func() bool {
		r = plugin(t, ns, "adopt", "deployment/web", "--retarget-hpa")
		return r.ExitCode == 0
	}, 2*time.Minute, time.Second, "last: %s", r)
	got, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: stagehandv1.SchemeGroupVersion.String(), Kind: "DeploymentConfig", Name: "web"},
		got.Spec.ScaleTargetRef)
}
