// Package notify sends the rollout events of RolloutNotifiers (docs/notifications.md): the
// versioned payload, the webhook and Slack bodies, the HMAC signature, one attempt's POST
// and the delay before the next attempt.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/template"
	"time"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Target is one receiver, with what its Secrets hold.
type Target struct {
	URL string
	// SigningKey signs a webhook's body; nil for Slack.
	SigningKey []byte
	// Slack sends {"text": ...} made from the payload.
	Slack bool
	// Template, when set, makes a webhook's body from the payload.
	Template *template.Template
}

// Body is what Target gets for payload.
func Body(t Target, p Payload) ([]byte, error) {
	switch {
	case t.Slack:
		return json.Marshal(map[string]string{"text": p.Text()})
	case t.Template != nil:
		var b bytes.Buffer
		if err := t.Template.Execute(&b, p); err != nil {
			return nil, fmt.Errorf("executing the receiver's template: %w", err)
		}
		return b.Bytes(), nil
	}
	return json.Marshal(p)
}

// Sign is the Stagehand-Signature header's value for body: "sha256=" and the hex
// HMAC-SHA256 of body with key.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature is body's, for receivers written in Go (and tests).
func Verify(key, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(key, body)), []byte(signature))
}

// Answer is what one attempt got back.
type Answer struct {
	// Code is the HTTP status; 0 when no answer came.
	Code int
	// Message is the error, or the start of a non-2xx answer's body.
	Message string
}

// Delivered reports whether the receiver took the delivery (2xx).
func (a Answer) Delivered() bool { return a.Code >= 200 && a.Code < 300 }

// maxMessage bounds the part of an answer kept in a receipt.
const maxMessage = 512

// Post makes one attempt: it POSTs body to t with the idempotency key and, for a webhook,
// the signature, within timeout.
func Post(ctx context.Context, client *http.Client, t Target, key string, body []byte, timeout time.Duration) Answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{Message: "a bad receiver URL: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stagehand-notifier")
	req.Header.Set(v1alpha1.IdempotencyKeyHeader, key)
	if t.SigningKey != nil {
		req.Header.Set(v1alpha1.SignatureHeader, Sign(t.SigningKey, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Message: err.Error()}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
	a := Answer{Code: resp.StatusCode}
	if !a.Delivered() {
		a.Message = strings.TrimSpace(string(head))
	}
	return a
}

// Delay is the wait before attempt number attempts+1: 1 s, doubling, at most 60 s. It is
// a function of the attempts recorded on the receipt, so a restarted controller waits as
// the one before would have.
func Delay(attempts int32) time.Duration {
	d := time.Second
	for i := int32(1); i < attempts && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}
