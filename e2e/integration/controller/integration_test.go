//go:build e2e

package controllerintegration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func getRS(t *testing.T, ns, name string) (phase string, replicas int32, reason string, ok bool) {
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", 0, "", false
	}
	require.NoError(t, err)
	return rs.Annotations[v1alpha1.PhaseAnnotation], rsReplicas(rs), rs.Annotations[v1alpha1.StatusReasonAnnotation], true
}

func waitPhase(t *testing.T, ns, rs, phase string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, rs+" "+phase, func(context.Context) (bool, error) {
		p, _, _, _ := getRS(t, ns, rs)
		return p == phase, nil
	})
}

func waitReplicas(t *testing.T, ns, rs string, want int32) {
	t.Helper()
	waitFor(t, 20*time.Second, rs+" replicas", func(context.Context) (bool, error) {
		_, r, _, ok := getRS(t, ns, rs)
		return ok && r == want, nil
	})
}

func updateDC(t *testing.T, ns, name string, change func(*v1alpha1.DeploymentConfig)) {
	t.Helper()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	waitFor(t, 10*time.Second, "updating "+name, func(ctx context.Context) (bool, error) {
		dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(dc)
		_, err = dcs.Update(ctx, dc, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

func TestIntegrationRolloutFailureAndRollback(t *testing.T) {
	requireEnv(t)
	ns := env.Namespace(t)
	pods := recordDeployerPods(t, ns)
	runController(t, ns)
	ctx := context.Background()

	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, stubDC("web", 2, rollsOut("exit 0")), metav1.CreateOptions{})
	require.NoError(t, err)
	waitPhase(t, ns, "web-1", "Complete", 30*time.Second)
	waitReplicas(t, ns, "web-1", 2)

	pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "web-1-deploy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "stagehand-deployer", pod.Spec.ServiceAccountName)
	assert.Equal(t, "stub/deployer:1", pod.Spec.Containers[0].Image)
	assert.Equal(t, "web-1", pod.Labels[v1alpha1.DeployerPodForLabel])
	assert.Equal(t, "ReplicaSet", pod.OwnerReferences[0].Kind)
	assert.Equal(t, "web-1", pod.Spec.Containers[0].Env[0].Value)

	waitFor(t, 20*time.Second, "status of revision 1", func(ctx context.Context) (bool, error) {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionProgressing)
		return dc.Status.LatestVersion == 1 && dc.Status.Phase == v1alpha1.RevisionPhaseComplete &&
			p != nil && p.Reason == v1alpha1.ReasonRolloutComplete && meta.IsStatusConditionTrue(dc.Status.Conditions, v1alpha1.ConditionAvailable), nil
	})

	// Revision 2 fails with the contract's termination message. While it runs, the test
	// plays the deployer and moves the replicas, so the rollback has something to undo.
	updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) {
		dc.Spec.Template.Spec.Containers[0].Image = "example.com/app:2"
		dc.Spec.Strategy.CustomParams.Command = []string{"/bin/sh", "-c",
			`echo '{"reason":"HookFailed","message":"boom"}' > "$STAGEHAND_TERMINATION_MESSAGE_PATH"; sleep 3; exit 3`}
	})
	waitPhase(t, ns, "web-2", "Running", 30*time.Second)
	scale := func(name string, n int32) {
		_, err := env.Kube.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	scale("web-2", 2)
	scale("web-1", 0)
	waitPhase(t, ns, "web-2", "Failed", 30*time.Second)
	_, _, reason, _ := getRS(t, ns, "web-2")
	assert.Equal(t, "HookFailed: boom", reason)
	waitReplicas(t, ns, "web-1", 2)
	waitReplicas(t, ns, "web-2", 0)

	// The controller scales first and writes the status after: wait for the status.
	var p *metav1.Condition
	waitFor(t, 20*time.Second, "Progressing RolloutFailed", func(ctx context.Context) (bool, error) {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p = meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.Reason == v1alpha1.ReasonRolloutFailed, nil
	})
	require.NotNil(t, p)
	assert.Equal(t, v1alpha1.ReasonRolloutFailed, p.Reason)
	assert.Contains(t, p.Message, "boom")
	created, _ := pods.snapshot()
	assert.Equal(t, map[string]int{"web-1-deploy": 1, "web-2-deploy": 1}, created)
	assert.Contains(t, env.DescribeEvents(ns), "RolloutFailed")
}

func TestIntegrationSupersede(t *testing.T) {
	requireEnv(t)
	ns := env.Namespace(t)
	pods := recordDeployerPods(t, ns)
	runController(t, ns)
	ctx := context.Background()

	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, stubDC("web", 1, "sleep 30"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitPhase(t, ns, "web-1", "Running", 30*time.Second)
	updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) {
		dc.Spec.Template.Spec.Containers[0].Image = "example.com/app:2"
		dc.Spec.Strategy.CustomParams.Command = []string{"/bin/sh", "-c", rollsOut("exit 0")}
	})
	waitPhase(t, ns, "web-2", "Complete", 40*time.Second)
	_, _, reason, _ := getRS(t, ns, "web-1")
	assert.Equal(t, "Superseded: superseded by a newer revision", reason)
	p, _, _, _ := getRS(t, ns, "web-1")
	assert.Equal(t, "Failed", p)
	created, maxLive := pods.snapshot()
	assert.Equal(t, map[string]int{"web-1-deploy": 1, "web-2-deploy": 1}, created)
	assert.Equal(t, 1, maxLive, "never two unfinished deployer pods at once")
}

func TestIntegrationPauseScaleAndPrune(t *testing.T) {
	requireEnv(t)
	ns := env.Namespace(t)
	runController(t, ns)
	ctx := context.Background()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)

	dc := stubDC("web", 1, rollsOut("exit 0"))
	one := int32(1)
	dc.Spec.RevisionHistoryLimit = &one
	_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPhase(t, ns, "web-1", "Complete", 30*time.Second)

	// Paused: a template change starts nothing, and the status says Paused.
	updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) {
		dc.Spec.Paused = true
		dc.Spec.Template.Spec.Containers[0].Image = "example.com/app:2"
	})
	waitFor(t, 10*time.Second, "Progressing Paused", func(ctx context.Context) (bool, error) {
		dc, err := dcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionProgressing)
		return p != nil && p.Reason == v1alpha1.ReasonPaused, nil
	})
	_, _, _, exists := getRS(t, ns, "web-2")
	assert.False(t, exists, "no revision while paused")

	// The scale subresource works while paused, and scales the active revision.
	scale := &autoscalingv1.Scale{}
	raw, err := env.Stagehand.StagehandV1alpha1().RESTClient().Get().Namespace(ns).Resource("deploymentconfigs").Name("web").SubResource("scale").DoRaw(ctx)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, scale))
	scale.Spec.Replicas = 3
	body, _ := json.Marshal(scale)
	_, err = env.Stagehand.StagehandV1alpha1().RESTClient().Put().Namespace(ns).Resource("deploymentconfigs").Name("web").SubResource("scale").
		Body(body).SetHeader("Content-Type", "application/json").DoRaw(ctx)
	require.NoError(t, err)
	waitReplicas(t, ns, "web-1", 3)

	// Resumed: revision 2, then 3; revision 1 is pruned (limit 1 keeps web-2 beside the active web-3).
	updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) { dc.Spec.Paused = false })
	waitPhase(t, ns, "web-2", "Complete", 30*time.Second)
	updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) { dc.Spec.Template.Spec.Containers[0].Image = "example.com/app:3" })
	waitPhase(t, ns, "web-3", "Complete", 30*time.Second)
	waitReplicas(t, ns, "web-3", 3)
	waitFor(t, 20*time.Second, "web-1 pruned", func(context.Context) (bool, error) {
		_, _, _, ok := getRS(t, ns, "web-1")
		return !ok, nil
	})
	_, _, _, ok := getRS(t, ns, "web-2")
	assert.True(t, ok, "revisionHistoryLimit 1 keeps one old revision")
}
