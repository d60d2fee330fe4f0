package adopt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestConfigFromStatefulSetKeepsWhatThePodsRun(t *testing.T) {
	labels := map[string]string{"app": "db"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "kept", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db-headless", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}},
			MinReadySeconds: 5,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}},
		},
	}
	dc, warnings := ConfigFromStatefulSet(set)
	assert.Equal(t, set.Spec.Template, dc.Spec.Template, "the template as the pods run it: no pod restarts")
	assert.Equal(t, set.Spec.Selector, dc.Spec.Selector)
	assert.Equal(t, int32(3), *dc.Spec.Replicas)
	assert.Equal(t, int32(5), dc.Spec.MinReadySeconds)
	assert.Equal(t, "db-headless", dc.Spec.StatefulSet.ServiceName)
	assert.Equal(t, "Parallel", dc.Spec.StatefulSet.PodManagementPolicy)
	assert.Equal(t, []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}, dc.Spec.StatefulSet.VolumeClaimTemplates, "without the status")
	assert.Equal(t, v1alpha1.DeploymentStrategyTypeRolling, dc.Spec.Strategy.Type)
	assert.Equal(t, intstr.FromInt32(2), *dc.Spec.Strategy.RollingParams.MaxUnavailable)
	assert.Equal(t, map[string]string{"note": "kept"}, dc.Annotations)
	assert.Equal(t, map[string]string{"team": "a"}, dc.Labels)
	assert.Len(t, warnings, 1, "the last-applied annotation")

	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	_, warnings = ConfigFromStatefulSet(set)
	assert.Contains(t, warnings[len(warnings)-1], "updateStrategy OnDelete")
}

func TestSettledSetRefusesAStatefulSetMidRolloutOrControlled(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2},
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, CurrentRevision: "a", UpdateRevision: "a"}}
	assert.NoError(t, settledSet(set))
	mid := set.DeepCopy()
	mid.Status.UpdateRevision, mid.Status.UpdatedReplicas = "b", 1
	assert.ErrorContains(t, settledSet(mid), "statefulset db is mid-rollout or scaling (1 of 3 pods on its template)")
	owned := set.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Thing", Name: "x", Controller: ptr.To(true)}}
	assert.ErrorContains(t, settledSet(owned), "statefulset db is controlled by Thing x")
}
