package v1alpha1

// DeploymentTriggerType names what starts a rollout.
// +kubebuilder:validation:Enum=ConfigChange;ImageChange
type DeploymentTriggerType string

const (
	// DeploymentTriggerOnConfigChange starts a rollout when the pod template changes.
	DeploymentTriggerOnConfigChange DeploymentTriggerType = "ConfigChange"
	// DeploymentTriggerOnImageChange starts a rollout when a registry tag moves to a new digest.
	DeploymentTriggerOnImageChange DeploymentTriggerType = "ImageChange"
)

// DeploymentTriggerPolicy is one trigger of a DeploymentConfig.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'ImageChange' ? has(self.imageChangeParams) : !has(self.imageChangeParams)",message="imageChangeParams is required when type is ImageChange, and not allowed when type is ConfigChange",fieldPath=".imageChangeParams",reason=FieldValueInvalid
type DeploymentTriggerPolicy struct {
	// Type is ConfigChange or ImageChange.
	// +required
	Type DeploymentTriggerType `json:"type"`

	// ImageChangeParams are the settings of an ImageChange trigger.
	// +optional
	ImageChangeParams *DeploymentTriggerImageChangeParams `json:"imageChangeParams,omitempty"`
}

// DeploymentTriggerImageChangeParams watch one registry tag for one or more containers.
type DeploymentTriggerImageChangeParams struct {
	// Automatic, when true, writes the new digest into the containers (which starts a
	// rollout). When false, the new digest is only recorded.
	// +optional
	Automatic bool `json:"automatic,omitempty"`

	// ContainerNames are the template containers whose image follows the tag. A container
	// follows at most one automatic trigger.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +required
	ContainerNames []string `json:"containerNames"`

	// From is the watched tag.
	// +required
	From ImageReference `json:"from"`

	// LastTriggeredImage is the digest reference (repo@sha256:...) that was last written
	// into the containers.
	// +optional
	LastTriggeredImage string `json:"lastTriggeredImage,omitempty"`
}

// ImageReference names an image in a registry.
type ImageReference struct {
	// Image is a tag reference, such as registry.example.com/team/app:stable (without a
	// tag: latest). A digest reference is refused: a digest never moves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="from.image must be a tag reference (repo:tag), not a digest: a digest never moves"
	// +kubebuilder:validation:XValidation:rule="self.contains('@') || self.matches('^(([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*|[[][a-fA-F0-9:]+[]])(:[0-9]+)?/)?[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*)*(:[a-zA-Z0-9_][-a-zA-Z0-9_.]{0,127})?$')",message="from.image must be an image reference such as registry.example.com:5000/team/app:stable: an optional registry host[:port]/, a lowercase repository path, and an optional :tag (default latest)"
	// +required
	Image string `json:"image"`
}
