package deployerpod

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func refuse(msg string) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-1-deploy", errors.New(msg))
	}
}

// An exceeded quota is a wait, not a failure: the revision stays New, records which quota
// it waits for (for the DC's Progressing condition and kubectl stagehand get), and the
// sync is retried. The wait ends with the next phase.
func TestSyncRevisionWaitsForAnExceededQuota(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	rs.CreationTimestamp = metav1.Now()
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	f.Kube.PrependReactor("create", "pods", refuse("exceeded quota: q, requested: limits.cpu=500m, used: limits.cpu=1, limited: limits.cpu=1"))

	require.Error(t, f.syncRevision("web-1"), "retried with back-off")
	got := f.GetRS("web-1")
	assert.Equal(t, "New", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.Waiting(got)
	assert.Equal(t, v1alpha1.ReasonDeployerPodWaiting, reason)
	assert.Contains(t, msg, "exceeded quota: q, requested: limits.cpu=500m")
	assert.Contains(t, msg, "retrying with back-off until")
	assert.Empty(t, got.Annotations[v1alpha1.StatusReasonAnnotation], "no outcome yet")

	// The quota frees: the pod is created and the wait is over.
	f.Kube.ReactionChain = f.Kube.ReactionChain[1:]
	require.NoError(t, f.Informers.ReplicaSets.Informer().GetIndexer().Update(got))
	require.NoError(t, f.syncRevision("web-1"))
	got = f.GetRS("web-1")
	assert.Equal(t, "Pending", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.NotContains(t, got.Annotations, v1alpha1.WaitingAnnotation)
}

// A quota that requires a field the pod lacks cannot clear by itself: the revision fails at
// once, with the apiserver's message and the field to set.
func TestSyncRevisionQuotaThatRequiresAFieldFailsAtOnce(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	f.Kube.PrependReactor("create", "pods", refuse("failed quota: q: must specify limits.ephemeral-storage for: deployer"))

	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.StatusReason(got)
	assert.Equal(t, v1alpha1.ReasonDeployerPodNotAdmit, reason)
	assert.Contains(t, msg, "must specify limits.ephemeral-storage")
	assert.Contains(t, msg, "set spec.strategy.resources.limits.ephemeral-storage in the DeploymentConfig")
}

// The controller's defaults give the deployer pod requests and limits; the strategy's
// resources win where they are set.
func TestDeployerPodGetsDefaultResources(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	dc.Spec.Strategy.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	defaults := Defaults{Image: "stagehand/deployer:test", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}
	pod, _, err := PodFor(rs, defaults)
	require.NoError(t, err)
	res := pod.Spec.Containers[0].Resources
	assert.Equal(t, "10m", res.Requests.Cpu().String())
	assert.Equal(t, "500m", res.Limits.Cpu().String())
	assert.Equal(t, "1Gi", res.Limits.Memory().String(), "the strategy's limit wins")
	assert.NotContains(t, res.Requests, corev1.ResourceMemory, "a limit without a request: the apiserver sets the request to it")
}
