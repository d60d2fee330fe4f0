package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentConfigStatus is the observed state of a DeploymentConfig.
type DeploymentConfigStatus struct {
	// LatestVersion is the number of the latest revision. It never decreases.
	// +optional
	LatestVersion int64 `json:"latestVersion,omitempty"`

	// ObservedGeneration is the metadata.generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the phase of the latest revision: New, Pending, Running, Complete or Failed.
	// +optional
	Phase RevisionPhase `json:"phase,omitempty"`

	// Frozen names the Failed latest revision while spec.strategy.onFailure is Freeze: the
	// controller scales no revision until a new revision or rollout retry. Empty otherwise.
	// +optional
	Frozen string `json:"frozen,omitempty"`

	// Replicas is the number of pods of every revision.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of pods of the latest revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of ready pods of every revision.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of available pods (ready for minReadySeconds) of
	// every revision.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UnavailableReplicas is the number of pods still missing for the desired count.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// Selector is the label selector of the pods in string form, for the scale
	// subresource and the HorizontalPodAutoscaler.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Details say why the latest revision was created.
	// +optional
	Details *DeploymentDetails `json:"details,omitempty"`

	// TriggerImages are what the tags of the ImageChange triggers resolved to, one entry
	// per watched tag, written by the trigger controller. With automatic: false this is
	// where a new digest shows up without a rollout.
	// +listType=map
	// +listMapKey=from
	// +kubebuilder:validation:MaxItems=16
	// +optional
	TriggerImages []TriggerImageStatus `json:"triggerImages,omitempty"`

	// Conditions are Available, Progressing and, with ImageChange triggers, ImagesResolved.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeploymentDetails say why a revision was created.
type DeploymentDetails struct {
	// Message is a free-text description, for example from a manual trigger.
	// +optional
	Message string `json:"message,omitempty"`

	// Causes are the reasons for the revision.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Causes []DeploymentCause `json:"causes,omitempty"`
}

// DeploymentCauseType names why a revision was created.
// +kubebuilder:validation:Enum=ConfigChange;ImageChange;Manual;Rollback
type DeploymentCauseType string

const (
	// DeploymentCauseConfigChange: the pod template changed (or the config was created).
	DeploymentCauseConfigChange DeploymentCauseType = "ConfigChange"
	// DeploymentCauseImageChange: a watched tag moved to a new digest.
	DeploymentCauseImageChange DeploymentCauseType = "ImageChange"
	// DeploymentCauseManual: a user asked for a rollout.
	DeploymentCauseManual DeploymentCauseType = "Manual"
	// DeploymentCauseRollback: a user rolled back to an earlier revision.
	DeploymentCauseRollback DeploymentCauseType = "Rollback"
)

// DeploymentCause is one reason for a revision.
type DeploymentCause struct {
	// Type is ConfigChange, ImageChange, Manual or Rollback.
	// +required
	Type DeploymentCauseType `json:"type"`

	// ImageTrigger names the image whose new digest caused the revision.
	// +optional
	ImageTrigger *DeploymentCauseImageTrigger `json:"imageTrigger,omitempty"`
}

// DeploymentCauseImageTrigger names the image behind an ImageChange cause.
type DeploymentCauseImageTrigger struct {
	// From is the watched tag.
	// +required
	From ImageReference `json:"from"`
}

// TriggerImageStatus is the latest resolution of one watched tag.
type TriggerImageStatus struct {
	// From is the watched tag, as in spec.triggers[].imageChangeParams.from.image.
	// +kubebuilder:validation:MaxLength=512
	// +required
	From string `json:"from"`

	// Image is the digest reference (repo@sha256:...) the tag resolved to at the last
	// successful check; empty until the tag resolved once.
	// +kubebuilder:validation:MaxLength=600
	// +optional
	Image string `json:"image,omitempty"`

	// Error is why the last check failed (the registry's answer); empty after a success.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Error string `json:"error,omitempty"`
}
