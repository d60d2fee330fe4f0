package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// StatefulSetWorkload makes a DeploymentConfig run its revisions on one StatefulSet, named
// like the DeploymentConfig: each revision is a version of its template, walked through its
// pods highest ordinal first (docs/statefulsets.md). Its presence is fixed when the
// DeploymentConfig is created, and so are its fields, as on a StatefulSet, except the claim
// retention policy.
//
// +kubebuilder:validation:XValidation:rule="self.?volumeClaimTemplates.orValue([]).size() == oldSelf.?volumeClaimTemplates.orValue([]).size()",message="claim templates cannot be added or removed, as on a StatefulSet: its pods keep the claims they have; create a new DeploymentConfig to change them",fieldPath=".volumeClaimTemplates",reason=FieldValueForbidden
type StatefulSetWorkload struct {
	// ServiceName is the headless Service that gives the pods their network identity, as
	// a StatefulSet's spec.serviceName.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cannot change, as on a StatefulSet: the pods' network identity hangs on it; create a new DeploymentConfig to change it",reason=FieldValueForbidden
	// +required
	ServiceName string `json:"serviceName"`

	// PodManagementPolicy is the StatefulSet's, kept as set: OrderedReady (the default)
	// creates and deletes pods one at a time in ordinal order; Parallel does not wait.
	// Rollouts walk the pods highest ordinal first under either.
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cannot change, as on a StatefulSet; create a new DeploymentConfig to change it",reason=FieldValueForbidden
	// +kubebuilder:default=OrderedReady
	// +optional
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`

	// VolumeClaimTemplates are the claims each pod gets, named <template>-<dc>-<ordinal>,
	// as a StatefulSet's. They cannot change once set: admission refuses a template added
	// or removed, and a change inside one fails the next revision with the apiserver's
	// refusal of the StatefulSet update. No rollout or rollback deletes a claim.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// PersistentVolumeClaimRetentionPolicy is the StatefulSet's: what happens to the
	// claims when the DeploymentConfig is deleted or scaled down. It applies only to what
	// the user does; rollouts and rollbacks never delete a claim.
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}
