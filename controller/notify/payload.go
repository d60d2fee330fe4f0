package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// PayloadVersion names the payload's schema (docs/notifications.md).
const PayloadVersion = "stagehand.dev/notification/v1"

// Payload is what a receiver gets, fixed when the event happened.
type Payload struct {
	Version          string               `json:"version"`
	Key              string               `json:"key"`
	Event            v1alpha1.NotifyEvent `json:"event"`
	Time             time.Time            `json:"time"`
	Namespace        string               `json:"namespace"`
	DeploymentConfig string               `json:"deploymentConfig"`
	Revision         int64                `json:"revision"`
	RevisionName     string               `json:"revisionName"`
	Images           []string             `json:"images"`
	Reason           string               `json:"reason,omitempty"`
	Message          string               `json:"message,omitempty"`
	LogTail          string               `json:"logTail,omitempty"`
	Step             string               `json:"step,omitempty"`
}

// Text is the payload in one line, for Slack.
func (p Payload) Text() string {
	text := fmt.Sprintf("%s/%s revision %d: %s", p.Namespace, p.DeploymentConfig, p.Revision, p.Event)
	for _, part := range []string{p.Reason, p.Message, p.Step} {
		if part != "" {
			text += " · " + part
		}
	}
	if p.LogTail != "" {
		text += "\n```\n" + p.LogTail + "\n```"
	}
	return text
}

// DeliveryName is the name of the receipt of (revision, event, receiver) of notifier: the
// same for every controller that sees the event, so that only one receipt is ever made.
func DeliveryName(notifier, revision string, event v1alpha1.NotifyEvent, receiver string) string {
	sum := sha256.Sum256([]byte(notifier + "/" + revision + "/" + string(event) + "/" + receiver))
	return v1alpha1.ShortenName(fmt.Sprintf("%s-%s-%s-%s", revision, strings.ToLower(string(event)), receiver, hex.EncodeToString(sum[:])[:6]))
}

// Key is the idempotency key of a delivery: the same for every attempt.
func Key(namespace, deliveryName string) string { return namespace + "/" + deliveryName }
