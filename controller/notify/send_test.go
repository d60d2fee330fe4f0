package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestPostSignsTheBodyAndSendsTheKey(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	p := Payload{Version: PayloadVersion, Key: "shop/web-4-failed", Event: v1alpha1.NotifyFailed, Revision: 4, RevisionName: "web-4"}
	target := Target{URL: srv.URL, SigningKey: []byte("s3cret")}
	sent, err := Body(target, p)
	require.NoError(t, err)
	a := Post(context.Background(), srv.Client(), target, p.Key, sent, 5*time.Second)
	assert.True(t, a.Delivered())
	assert.Equal(t, http.StatusAccepted, a.Code)
	assert.Equal(t, "shop/web-4-failed", got.Header.Get(v1alpha1.IdempotencyKeyHeader))
	assert.True(t, Verify([]byte("s3cret"), body, got.Header.Get(v1alpha1.SignatureHeader)), "the signature verifies")
	assert.False(t, Verify([]byte("other"), body, got.Header.Get(v1alpha1.SignatureHeader)))
	var back Payload
	require.NoError(t, json.Unmarshal(body, &back))
	assert.Equal(t, p, back)
}

func TestPostKeepsTheStartOfAFailedAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	a := Post(context.Background(), srv.Client(), Target{URL: srv.URL}, "k", []byte("{}"), time.Second)
	assert.False(t, a.Delivered())
	assert.Equal(t, Answer{Code: 503, Message: "down for maintenance"}, a)

	a = Post(context.Background(), srv.Client(), Target{URL: "http://127.0.0.1:1"}, "k", []byte("{}"), time.Second)
	assert.Zero(t, a.Code)
	assert.Contains(t, a.Message, "connection refused")
}

func TestBodyForSlackAndATemplate(t *testing.T) {
	p := Payload{Namespace: "shop", DeploymentConfig: "web", Revision: 4, Event: v1alpha1.NotifyFailed, Reason: "TimedOut", LogTail: "boom"}
	slack, err := Body(Target{Slack: true}, p)
	require.NoError(t, err)
	assert.JSONEq(t, "{\"text\":\"shop/web revision 4: Failed · TimedOut\\n```\\nboom\\n```\"}", string(slack))
	tmpl := template.Must(template.New("t").Parse(`{"summary":"{{.DeploymentConfig}} {{.Event}}"}`))
	custom, err := Body(Target{Template: tmpl}, p)
	require.NoError(t, err)
	assert.Equal(t, `{"summary":"web Failed"}`, string(custom))
}

func TestDelayDoublesToAMinute(t *testing.T) {
	var got []time.Duration
	for a := int32(1); a <= 8; a++ {
		got = append(got, Delay(a))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute}, got)
}

func TestDeliveryNameIsTheSameForEveryController(t *testing.T) {
	a := DeliveryName("team", "web-4", v1alpha1.NotifyFailed, "ops")
	assert.Equal(t, a, DeliveryName("team", "web-4", v1alpha1.NotifyFailed, "ops"))
	assert.NotEqual(t, a, DeliveryName("team", "web-4", v1alpha1.NotifyFailed, "chat"))
	assert.NotEqual(t, a, DeliveryName("other", "web-4", v1alpha1.NotifyFailed, "ops"))
	assert.Regexp(t, `^web-4-failed-ops-[0-9a-f]{6}$`, a)
}
