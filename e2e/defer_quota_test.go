//go:build e2e

package e2e

// Issue 22 item 9: in a namespace whose ResourceQuota requires cpu and memory requests
// and limits, a step pod gets the controller's default resources (--defer-step-*), so
// that the quota admits it and the steps run.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// createComputeQuota creates a ResourceQuota that counts (and so requires) cpu and memory
// requests and limits, and waits until the quota controller has computed its status:
// before that the apiserver refuses every pod.
func createComputeQuota(t *testing.T, ns string) {
	t.Helper()
	q := resource.MustParse
	_, err := env.Kube.CoreV1().ResourceQuotas(ns).Create(context.Background(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: q("2"), corev1.ResourceLimitsCPU: q("4"),
			corev1.ResourceRequestsMemory: q("1Gi"), corev1.ResourceLimitsMemory: q("2Gi"),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := env.Kube.CoreV1().ResourceQuotas(ns).Get(context.Background(), "compute", metav1.GetOptions{})
		return err == nil && len(got.Status.Hard) == 4
	}, podTimeout, 100*time.Millisecond, "the quota controller to compute the quota's status")
}

func TestDeferStepsRunInANamespaceWhoseQuotaRequiresResources(t *testing.T) {
	requireController(t)
	given := env.Given(t)
	ns := given.NS
	createDeferPolicy(t, ns, "web", nil, stagehandv1.DeferStep{
		Name: "clean", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo cleaned $STAGEHAND_POD_NAME"}})
	// Given a DC whose template sets its own resources
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRecreate)
	dc.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	s := given.DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete)
	// and, from now on, a quota that requires requests and limits (created after the
	// rollout: the deployer pod's own default resources are another change)
	createComputeQuota(t, ns)
	pods := env.WaitForPods(t, ns, "app=web", podTimeout, "the DC's pod running with the finalizer", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(ps[0])
	})
	pod := pods[0]
	progress := watchProgress(t, ns, pod.Name)

	// When the pod is deleted
	deletePod(t, ns, pod.Name, nil)

	// Then the step pod is admitted with the default resources, and the step runs
	assert.Equal(t, []string{"0/1", "1/1"}, progress.waitGone(t, deferTimeout), "events: %v", podEvents(t, ns, pod.Name))
	steps := stepPods(t, ns, string(pod.UID))
	require.Len(t, steps, 1)
	assert.Equal(t, corev1.PodSucceeded, steps[0].Status.Phase)
	r := steps[0].Spec.Containers[0].Resources
	assert.Equal(t, "10m", r.Requests.Cpu().String())
	assert.Equal(t, "100m", r.Limits.Cpu().String())
	assert.Equal(t, "16Mi", r.Requests.Memory().String())
	assert.Equal(t, "64Mi", r.Limits.Memory().String())
}
