package deployerpod

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func node(name string, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since)}}}}
}

// runningOn is revision web-1, Running, with its deployer pod running on node.
func runningOn(t *testing.T, nodeName string) (*v1alpha1.DeploymentConfig, *appsv1.ReplicaSet, *corev1.Pod) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 0)
	pod := deployerPod(t, rs, corev1.PodRunning)
	pod.Spec.NodeName = nodeName
	return dc, rs, pod
}

func TestNodeNotReadyIsReportedAndNothingElseHappens(t *testing.T) {
	dc, rs, pod := runningOn(t, "node-2")
	now := time.Now()
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod, node("node-2", corev1.ConditionUnknown, now.Add(-45*time.Second)))
	f.pods.now = func() time.Time { return now }

	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	reason, msg := revision.Waiting(got)
	assert.Equal(t, v1alpha1.ReasonDeployerNodeNotReady, reason)
	assert.Equal(t, "deployer pod web-1-deploy: node node-2 NotReady for 45s", msg)
	assert.Equal(t, "Running", got.Annotations[v1alpha1.PhaseAnnotation], "the deployer may still run: the revision goes on")
	assert.NotContains(t, f.Actions(), "delete pods")
	assert.NotContains(t, f.Actions(), "create pods")

	// The node comes back: the wait is cleared.
	f.Cache(got)
	f.Cache(node("node-2", corev1.ConditionTrue, now))
	require.NoError(t, f.syncRevision("web-1"))
	reason, _ = revision.Waiting(f.GetRS("web-1"))
	assert.Empty(t, reason)
}

func TestNodeDeletedFailsTheRevisionAndDeletesTheDeployerPod(t *testing.T) {
	dc, rs, pod := runningOn(t, "node-2")
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod) // no node-2, in the cache or the apiserver

	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "DeployerNodeLost: deployer pod web-1-deploy: node node-2 was deleted", got.Annotations[v1alpha1.StatusReasonAnnotation])
	_, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), pod.Name, metav1.GetOptions{})
	assert.Error(t, err, "the pod of the lost node is deleted: no kubelet will ever stop it")
	assert.NotContains(t, f.Actions(), "create pods")
}

func TestNodeMissingFromTheCacheOnlyIsNotLost(t *testing.T) {
	dc, rs, pod := runningOn(t, "node-3")
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)
	_, err := f.Kube.CoreV1().Nodes().Create(context.Background(), node("node-3", corev1.ConditionTrue, time.Now()), metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, "Running", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
}

func TestPodGoneWhileItsNodeWasNotReadyIsDeployerNodeLost(t *testing.T) {
	dc, rs, _ := runningOn(t, "node-2")
	rs.Annotations[v1alpha1.WaitingAnnotation] = revision.FormatStatusReason(v1alpha1.ReasonDeployerNodeNotReady,
		"deployer pod web-1-deploy: node node-2 NotReady for 5m0s")
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs) // the pod is gone

	for range podGoneTolerance + 1 {
		_ = f.syncRevision("web-1")
	}
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "DeployerNodeLost: deployer pod web-1-deploy: node node-2 NotReady for 5m0s, and the pod is gone",
		got.Annotations[v1alpha1.StatusReasonAnnotation])
}
