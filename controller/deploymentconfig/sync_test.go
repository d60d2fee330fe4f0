package deploymentconfig

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

func TestSyncFirstRevisionOnCreation(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 3)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})

	require.NoError(t, f.syncDC("web"))

	got := f.GetDC("web")
	assert.Equal(t, int64(1), got.Status.LatestVersion)
	require.NotNil(t, got.Status.Details)
	assert.Equal(t, v1alpha1.DeploymentCauseConfigChange, got.Status.Details.Causes[0].Type)

	rs := f.GetRS("web-1")
	assert.Equal(t, int32(0), *rs.Spec.Replicas)
	assert.Equal(t, map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "1"}, rs.Labels)
	assert.Equal(t, map[string]string{"app": "web", v1alpha1.RevisionLabel: "1"}, rs.Spec.Selector.MatchLabels)
	assert.Equal(t, map[string]string{"app": "web", v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "1"}, rs.Spec.Template.Labels)
	assert.Equal(t, "New", rs.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "3", rs.Annotations[v1alpha1.DesiredReplicasAnnotation])
	assert.Equal(t, "ConfigChange", rs.Annotations[v1alpha1.CauseAnnotation])
	assert.Equal(t, "web-1-deploy", rs.Annotations[v1alpha1.DeployerPodAnnotation])
	ref := metav1.GetControllerOf(rs)
	require.NotNil(t, ref)
	assert.Equal(t, "DeploymentConfig", ref.Kind)
	assert.Equal(t, dc.UID, ref.UID)
	assert.True(t, *ref.BlockOwnerDeletion)
	snap, err := revision.Snapshot(rs)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.DeploymentStrategyTypeRolling, snap.Strategy.Type, "the snapshot has defaults applied")
	assert.NotNil(t, snap.Selector)
}

func TestSyncNoTriggerNoRollout(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "create replicasets")
	assert.Equal(t, int64(0), f.GetDC("web").Status.LatestVersion)
}

func TestSyncNewRevisionOnlyOnTemplateChange(t *testing.T) {
	tests := []struct {
		name    string
		change  func(dc *v1alpha1.DeploymentConfig)
		wantNew bool
	}{
		{name: "nothing changed", change: func(*v1alpha1.DeploymentConfig) {}},
		{name: "defaults written by the apiserver", change: func(dc *v1alpha1.DeploymentConfig) { v1alpha1.SetDefaults(dc) }},
		{name: "empty instead of nil maps", change: func(dc *v1alpha1.DeploymentConfig) {
			dc.Spec.Template.Annotations = map[string]string{}
			dc.Spec.Template.Spec.NodeSelector = map[string]string{}
		}},
		{name: "replicas only", change: func(dc *v1alpha1.DeploymentConfig) { r := int32(7); dc.Spec.Replicas = &r }},
		{name: "strategy only", change: func(dc *v1alpha1.DeploymentConfig) { dc.Spec.Strategy.Type = v1alpha1.DeploymentStrategyTypeRecreate }},
		{name: "image", change: func(dc *v1alpha1.DeploymentConfig) { dc.Spec.Template.Spec.Containers[0].Image = "app:2" }, wantNew: true},
		{name: "template label", change: func(dc *v1alpha1.DeploymentConfig) { dc.Spec.Template.Labels["tier"] = "x" }, wantNew: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
			rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
			dc := base.DeepCopy()
			tt.change(dc)
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

			require.NoError(t, f.syncDC("web"))

			if tt.wantNew {
				assert.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion)
				assert.Contains(t, f.Actions(), "create replicasets")
				return
			}
			assert.NotContains(t, f.Actions(), "create replicasets")
			assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion)
			assert.Equal(t, revision.ConfigReplicas(dc), *f.GetRS("web-1").Spec.Replicas, "the active revision runs spec.replicas")
		})
	}
}

func TestSyncReplicasChangeScalesActiveRevision(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 2)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 0)
	rs2 := controllertest.Revision(t, base, 2, v1alpha1.RevisionPhaseComplete, 2)
	dc := base.DeepCopy()
	five := int32(5)
	dc.Spec.Replicas = &five
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2)

	require.NoError(t, f.syncDC("web"))

	got := f.GetRS("web-2")
	assert.Equal(t, int32(5), *got.Spec.Replicas)
	assert.Equal(t, "5", got.Annotations[v1alpha1.DesiredReplicasAnnotation])
	assert.Equal(t, int32(0), *f.GetRS("web-1").Spec.Replicas)
	assert.NotContains(t, f.Actions(), "create replicasets")
}

func TestSyncRollbackAfterFailure(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 3), 2)
	rs1 := controllertest.Revision(t, controllertest.DC("web", "app:1", 3), 1, v1alpha1.RevisionPhaseComplete, 1)
	rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseFailed, 2)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2, deployerPod(t, rs2, corev1.PodFailed))

	require.NoError(t, f.syncDC("web"))

	assert.Equal(t, int32(3), *f.GetRS("web-1").Spec.Replicas, "the newest Complete revision runs spec.replicas again")
	assert.Equal(t, int32(0), *f.GetRS("web-2").Spec.Replicas)
}

func TestSyncTestModeScalesEverythingDown(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 3), 1)
	dc.Spec.Test = true
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 3)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, int32(0), *f.GetRS("web-1").Spec.Replicas)
}

func TestSyncSupersedeWaitsForTheDeployerPod(t *testing.T) {
	old := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs1 := controllertest.Revision(t, old, 1, v1alpha1.RevisionPhaseRunning, 0)
	pod := deployerPod(t, rs1, corev1.PodRunning)
	dc := old.DeepCopy()
	dc.Spec.Template.Spec.Containers[0].Image = "app:2"
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, pod)
	f.KeepPodsOnDelete()

	// First sync: revision 1 is cancelled and failed in one write, its pods are deleted.
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, []string{"update replicasets", "get pods", "delete pods", "list pods"}, f.Actions(),
		"the deployer pod is read first: only a pod the revision owns is deleted")
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "true", got.Annotations[v1alpha1.CancelledAnnotation])
	assert.Equal(t, "Superseded: superseded by a newer revision", got.Annotations[v1alpha1.StatusReasonAnnotation])
	assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion)

	// While the old deployer pod exists, no new revision.
	f.Cache(got)
	err := f.syncDC("web")
	require.Error(t, err)
	assert.NotContains(t, f.Actions(), "create replicasets")
	assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion)

	// Once it is gone, revision 2 starts: latestVersion first, then the ReplicaSet.
	require.NoError(t, f.Kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "ns", pod.Name))
	require.NoError(t, f.Informers.DeployerPods.Informer().GetIndexer().Delete(pod))
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion)
	assert.Equal(t, "New", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])
}

func TestSyncCancelledRevision(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 2), 2)
	rs1 := controllertest.Revision(t, controllertest.DC("web", "app:1", 2), 1, v1alpha1.RevisionPhaseComplete, 2)
	rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseRunning, 1)
	rs2.Annotations[v1alpha1.CancelledAnnotation] = "true"
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2)

	require.NoError(t, f.syncDC("web"))
	got := f.GetRS("web-2")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, v1alpha1.ReasonCancelled, must(revision.StatusReason(got)))
	assert.NotContains(t, f.Actions(), "create replicasets")

	// The next sync rolls back: revision 1 keeps 2 replicas, revision 2 goes to 0.
	f.Cache(got)
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, int32(0), *f.GetRS("web-2").Spec.Replicas)
	assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas)
	p := condition(t, f.GetDC("web"), v1alpha1.ConditionProgressing)
	assert.Equal(t, v1alpha1.ReasonRolloutCancelled, p.Reason)
}

func TestSyncRecreatesMissingLatestRevision(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1) // a crash after the bump, before the ReplicaSet
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, "New", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion, "no second bump")
}

func TestSyncWaitsForAStaleDCCache(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 1)
	rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseRunning, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2)
	err := f.syncDC("web")
	require.True(t, plumbing.IsRequeue(err), "want a requeue, have %v", err)
	assert.Empty(t, f.Actions(), "revision 2 is not touched on a stale view")
}

func TestSyncPausedStartsNothing(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 1)
	dc := base.DeepCopy()
	dc.Spec.Paused = true
	dc.Spec.Template.Spec.Containers[0].Image = "app:2"
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "create replicasets")
	p := condition(t, f.GetDC("web"), v1alpha1.ConditionProgressing)
	assert.Equal(t, v1alpha1.ReasonPaused, p.Reason)
}

func TestSyncEnsuresDeployerAccess(t *testing.T) {
	f := newFixture(t, []*v1alpha1.DeploymentConfig{controllertest.DC("web", "app:1", 1)})
	require.NoError(t, f.syncDC("web"))
	_, err := f.Kube.CoreV1().ServiceAccounts("ns").Get(t.Context(), v1alpha1.DeployerServiceAccountName, metav1.GetOptions{})
	require.NoError(t, err)
	rb, err := f.Kube.RbacV1().RoleBindings("ns").Get(t.Context(), v1alpha1.DeployerServiceAccountName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.DeployerClusterRoleName, rb.RoleRef.Name)
	assert.Equal(t, "ClusterRole", rb.RoleRef.Kind)
	assert.Equal(t, v1alpha1.DeployerServiceAccountName, rb.Subjects[0].Name)
}

func must[T any](v T, _ ...any) T { return v }

func condition(t *testing.T, dc *v1alpha1.DeploymentConfig, conditionType string) metav1.Condition {
	t.Helper()
	for _, c := range dc.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", conditionType, dc.Status.Conditions)
	return metav1.Condition{}
}

// While the informers do not show the deployer's ServiceAccount and RoleBinding yet (the
// fixture's never do), the controller trusts its own creates instead of creating them
// again for the namespace's next DC; once the informers report a deletion, or once
// accessCacheLag has passed, they are created again.
func TestDeployerAccessIsCreatedOnceWhileTheCacheLags(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	creates := func() int {
		n := 0
		for _, a := range f.Kube.Actions() {
			if a.GetVerb() == "create" && (a.GetResource().Resource == "serviceaccounts" || a.GetResource().Resource == "rolebindings") {
				n++
			}
		}
		f.ClearActions()
		return n
	}
	now := time.Now()
	f.dc.access.now = func() time.Time { return now }
	ensure := func() { require.NoError(t, f.dc.ensureDeployerAccess(t.Context(), dc)) }

	ensure()
	assert.Equal(t, 2, creates(), "the ServiceAccount and the RoleBinding")
	ensure()
	assert.Equal(t, 0, creates(), "not again while the caches lag")

	f.dc.accessDeleted("RoleBinding")(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: v1alpha1.DeployerServiceAccountName}})
	ensure()
	assert.Equal(t, 1, creates(), "a deleted RoleBinding is created again")

	now = now.Add(accessCacheLag)
	ensure()
	assert.Equal(t, 2, creates(), "after accessCacheLag the informers are trusted again")
}

// In a namespace being deleted, the refusal of the deployer's RoleBinding is not an error
// (the DCs go with the namespace), and the next DC of the namespace does not try again.
func TestDeployerAccessInATerminatingNamespace(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc})
	attempts := 0
	f.Kube.PrependReactor("create", "rolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		attempts++
		err := apierrors.NewForbidden(rbacv1.Resource("rolebindings"), v1alpha1.DeployerServiceAccountName,
			errors.New("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	require.NoError(t, f.dc.ensureDeployerAccess(t.Context(), dc))
	require.NoError(t, f.dc.ensureDeployerAccess(t.Context(), dc))
	assert.Equal(t, 1, attempts)
}
