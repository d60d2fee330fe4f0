//go:build e2e

package e2e

// The update rules of spec.statefulSet (docs/statefulsets.md, "The API"), on the real
// apiserver: the workload kind, the service name, the pod management policy and the set of
// claim templates are fixed at creation, while the template, the replicas and the claim
// retention policy can change. A change inside a claim template is left to the apiserver's
// own refusal of the StatefulSet update: a CEL equality over claim templates exceeds the
// CRD's cost budget.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestAdmissionStatefulSetUpdates(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	ctx := context.Background()
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	create := func(name string, sts *stagehandv1.StatefulSetWorkload) {
		dc := framework.NewDeploymentConfig(name, 0, stagehandv1.DeploymentStrategyTypeRolling)
		dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{} // no rollout: admission only
		dc.Spec.StatefulSet = sts
		_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// update is a dry-run update of DC name changed by mutate, read again after a conflict:
	// the controller writes the DC's status meanwhile.
	update := func(t *testing.T, name string, mutate func(*stagehandv1.DeploymentConfig)) error {
		t.Helper()
		for {
			dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			mutate(dc)
			_, err = dcs.Update(ctx, dc, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	refused := func(t *testing.T, name string, mutate func(*stagehandv1.DeploymentConfig), field, message string) {
		t.Helper()
		err := update(t, name, mutate)
		require.Error(t, err, "the apiserver accepted the update")
		require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
		assert.Contains(t, err.Error(), field)
		assert.Contains(t, err.Error(), message)
	}

	create("db", &stagehandv1.StatefulSetWorkload{ServiceName: "db", VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}})
	create("web", nil)

	t.Run("removing statefulSet is refused", func(t *testing.T) {
		refused(t, "db", func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.StatefulSet = nil
		}, "spec.statefulSet", "cannot be added or removed")
	})
	t.Run("adding statefulSet is refused", func(t *testing.T) {
		refused(t, "web", func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.StatefulSet = &stagehandv1.StatefulSetWorkload{ServiceName: "web"}
		}, "spec.statefulSet", "cannot be added or removed")
	})
	t.Run("adding a claim template is refused", func(t *testing.T) {
		refused(t, "db", func(dc *stagehandv1.DeploymentConfig) {
			more := claim.DeepCopy()
			more.Name = "logs"
			dc.Spec.StatefulSet.VolumeClaimTemplates = append(dc.Spec.StatefulSet.VolumeClaimTemplates, *more)
		}, "spec.statefulSet.volumeClaimTemplates", "claim templates cannot be added or removed")
	})
	t.Run("changing the service name is refused", func(t *testing.T) {
		refused(t, "db", func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.StatefulSet.ServiceName = "db-headless"
		}, "spec.statefulSet.serviceName", "cannot change, as on a StatefulSet")
	})
	t.Run("changing the pod management policy is refused", func(t *testing.T) {
		refused(t, "db", func(dc *stagehandv1.DeploymentConfig) {
			dc.Spec.StatefulSet.PodManagementPolicy = "Parallel"
		}, "spec.statefulSet.podManagementPolicy", "cannot change, as on a StatefulSet")
	})
	t.Run("the template, the replicas and the retention policy may change", func(t *testing.T) {
		require.NoError(t, update(t, "db", func(dc *stagehandv1.DeploymentConfig) {
			framework.SetVersion(dc, 2)
			dc.Spec.Replicas = ptr.To[int32](3)
			dc.Spec.StatefulSet.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
		}))
	})
}
