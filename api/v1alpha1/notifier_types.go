package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotifyEvent is one kind of rollout event a RolloutNotifier can subscribe to
// (docs/notifications.md).
// +kubebuilder:validation:Enum=Started;Waiting;Complete;Failed;RolledBack;Frozen;HookFailed;ExecutionHookFailed;DeferStepFailed
type NotifyEvent string

const (
	// NotifyStarted: a revision's deployer started.
	NotifyStarted NotifyEvent = "Started"
	// NotifyWaiting: a rollout waits for a person or a resource: paused at a step, or
	// waiting for quota.
	NotifyWaiting NotifyEvent = "Waiting"
	// NotifyComplete: a revision completed.
	NotifyComplete NotifyEvent = "Complete"
	// NotifyFailed: a revision failed, with its reason and the hook's log tail.
	NotifyFailed NotifyEvent = "Failed"
	// NotifyRolledBack: a failed revision rolled back to the newest Complete one.
	NotifyRolledBack NotifyEvent = "RolledBack"
	// NotifyFrozen: a failed revision froze the rollout (onFailure: Freeze).
	NotifyFrozen NotifyEvent = "Frozen"
	// NotifyHookFailed: a lifecycle hook attempt failed: a hook pod, or the ExecutionHook
	// of an exec hook. The first of the revision is sent.
	NotifyHookFailed NotifyEvent = "HookFailed"
	// NotifyExecutionHookFailed: an ExecutionHook that ran in the DC's pods failed. The
	// first of each revision is sent.
	NotifyExecutionHookFailed NotifyEvent = "ExecutionHookFailed"
	// NotifyDeferStepFailed: a DeferPolicy step failed for one of the DC's pods. The
	// first of each revision is sent.
	NotifyDeferStepFailed NotifyEvent = "DeferStepFailed"
)

// Bounds of a RolloutNotifier.
const (
	MaxNotifyReceivers = 8
	// DefaultDeliveryDeadlineSeconds is how long a delivery is retried before it is marked
	// failed.
	DefaultDeliveryDeadlineSeconds = 600
	MaxDeliveryDeadlineSeconds     = 86400
)

// RolloutNotifier sends the rollout events of the DeploymentConfigs it selects, in its own
// namespace, to its receivers: each (revision, event, receiver) once, with a receipt
// (a RolloutDelivery) that says what was sent, when, and the answer.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=rn,categories=stagehand
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Events",type=string,JSONPath=`.spec.events`
// +kubebuilder:printcolumn:name="Delivered",type=integer,JSONPath=`.status.delivered`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutNotifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutNotifierSpec   `json:"spec"`
	Status RolloutNotifierStatus `json:"status,omitempty"`
}

// RolloutNotifierSpec says which DCs, which events, and to whom.
type RolloutNotifierSpec struct {
	// Selector selects the DeploymentConfigs of the notifier's namespace by their labels;
	// an empty selector selects them all.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// Events are the events to send; each is sent once per revision and receiver.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=9
	// +listType=set
	Events []NotifyEvent `json:"events"`

	// Receivers get every event, each on its own: one that fails does not hold the others.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Receivers []NotifyReceiver `json:"receivers"`

	// DeliveryDeadlineSeconds is how long one delivery is retried, with capped back-off,
	// before it is marked failed with an event. Default 600.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=86400
	// +optional
	DeliveryDeadlineSeconds *int64 `json:"deliveryDeadlineSeconds,omitempty"`
}

// NotifyReceiver is one destination. Exactly one of webhook and slack is set. Addresses
// and keys come from Secrets of the notifier's namespace, never from the spec.
// +kubebuilder:validation:XValidation:rule="has(self.webhook) != has(self.slack)",message="set exactly one of webhook and slack",reason=FieldValueInvalid
type NotifyReceiver struct {
	// Name names the receiver in receipts and metrics.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// Webhook POSTs the versioned JSON payload (docs/notifications.md), signed.
	// +optional
	Webhook *WebhookReceiver `json:"webhook,omitempty"`
	// Slack POSTs to a Slack incoming webhook.
	// +optional
	Slack *SlackReceiver `json:"slack,omitempty"`
}

// WebhookReceiver is a generic HTTP receiver.
type WebhookReceiver struct {
	// URL is the key of a Secret that holds the receiver's URL.
	// +required
	URL SecretKey `json:"url"`
	// SigningKey is the key of a Secret whose value signs each body: the header
	// Stagehand-Signature is "sha256=" and the hex HMAC-SHA256 of the body.
	// +required
	SigningKey SecretKey `json:"signingKey"`
	// Template, when set, is a Go text/template over the payload that makes the body
	// instead of the JSON payload. Admission checks that its actions are closed; the
	// controller parses it, marks the notifier not Ready when it does not parse, and fails
	// its deliveries at once, with an event.
	// +kubebuilder:validation:MaxLength=8192
	// +kubebuilder:validation:XValidation:rule="self.split('{{').size() == self.split('}}').size()",message="does not parse: every {{ needs its }} (a Go text/template over the payload in docs/notifications.md)",reason=FieldValueInvalid
	// +optional
	Template string `json:"template,omitempty"`
}

// SlackReceiver is a Slack incoming webhook.
type SlackReceiver struct {
	// URL is the key of a Secret that holds the incoming webhook's URL.
	// +required
	URL SecretKey `json:"url"`
}

// SecretKey names one key of a Secret in the notifier's namespace.
type SecretKey struct {
	// +kubebuilder:validation:MaxLength=253
	// +required
	SecretName string `json:"secretName"`
	// +kubebuilder:validation:MaxLength=253
	// +required
	Key string `json:"key"`
}

// The Ready condition of a RolloutNotifier and its reasons.
const (
	NotifierConditionReady = "Ready"
	// ReasonReceiversReady: every receiver's Secrets can be read and its template parses.
	ReasonReceiversReady = "ReceiversReady"
	// ReasonSecretUnreadable: a receiver's Secret is missing, lacks its key, or the
	// controller may not read it.
	ReasonSecretUnreadable = "SecretUnreadable"
	// ReasonTemplateInvalid: a receiver's template does not parse.
	ReasonTemplateInvalid = "TemplateInvalid"
)

// RolloutNotifierStatus counts the notifier's receipts.
type RolloutNotifierStatus struct {
	// ObservedGeneration is the generation these counts and conditions are about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Delivered and Failed count its receipts by result.
	// +optional
	Delivered int32 `json:"delivered,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Conditions: Ready says whether its Secrets and templates can be read.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutNotifierList is a list of RolloutNotifiers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type RolloutNotifierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutNotifier `json:"items"`
}

// DeliveryPhase is where one delivery stands.
// +kubebuilder:validation:Enum=Pending;Sending;Delivered;Failed
type DeliveryPhase string

const (
	// DeliveryPending: recorded, not sent yet, or waiting for its next attempt.
	DeliveryPending DeliveryPhase = "Pending"
	// DeliverySending: recorded just before an attempt. A controller that finds a delivery
	// Sending after a restart sends it again, with the same idempotency key.
	DeliverySending DeliveryPhase = "Sending"
	// DeliveryDelivered: the receiver answered 2xx.
	DeliveryDelivered DeliveryPhase = "Delivered"
	// DeliveryFailed: the deadline passed without a 2xx answer.
	DeliveryFailed DeliveryPhase = "Failed"
)

// IdempotencyKeyHeader carries a delivery's key: the same for every attempt of one
// (revision, event, receiver), so that a receiver can drop a repeat.
const IdempotencyKeyHeader = "Stagehand-Idempotency-Key"

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>" for a webhook receiver.
const SignatureHeader = "Stagehand-Signature"

// RolloutDelivery is the receipt of one (revision, event, receiver): created, with the
// payload, before the first attempt, and updated before and after each attempt. Its name
// is derived from the three, so that a second controller (after a leader change) finds it
// instead of sending again.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=rd,categories=stagehand
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Event",type=string,JSONPath=`.spec.event`
// +kubebuilder:printcolumn:name="Receiver",type=string,JSONPath=`.spec.receiver`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Code",type=integer,JSONPath=`.status.responseCode`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutDelivery struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutDeliverySpec   `json:"spec"`
	Status RolloutDeliveryStatus `json:"status,omitempty"`
}

// RolloutDeliverySpec is what is sent, fixed when the event happened.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a delivery's spec cannot change: it is what was sent",reason=FieldValueForbidden
type RolloutDeliverySpec struct {
	// Notifier, Receiver, Revision and Event name the delivery.
	// +kubebuilder:validation:MaxLength=253
	Notifier string `json:"notifier"`
	// +kubebuilder:validation:MaxLength=63
	Receiver string `json:"receiver"`
	// +kubebuilder:validation:MaxLength=253
	Revision string      `json:"revision"`
	Event    NotifyEvent `json:"event"`
	// Key is the idempotency key, sent in the Stagehand-Idempotency-Key header.
	// +kubebuilder:validation:MaxLength=128
	Key string `json:"key"`
	// Payload is the JSON payload, as the event was (docs/notifications.md).
	// +kubebuilder:validation:MaxLength=65536
	Payload string `json:"payload"`
}

// RolloutDeliveryStatus is the delivery's state and the receiver's last answer.
type RolloutDeliveryStatus struct {
	// +optional
	Phase DeliveryPhase `json:"phase,omitempty"`
	// Attempts counts the attempts started.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// ResponseCode is the receiver's last HTTP status; 0 when it did not answer.
	// +optional
	ResponseCode int32 `json:"responseCode,omitempty"`
	// Message is the last error, or the start of the last answer's body.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// LastAttemptTime is when the last attempt started; NextAttemptTime when the next one
	// may; DeliveredTime when a 2xx came back.
	// +optional
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`
	// +optional
	DeliveredTime *metav1.Time `json:"deliveredTime,omitempty"`
}

// RolloutDeliveryList is a list of RolloutDeliveries.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type RolloutDeliveryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutDelivery `json:"items"`
}
