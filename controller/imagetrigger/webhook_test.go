package imagetrigger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/images"
)

type recordingPoker struct{ refs []string }

func (p *recordingPoker) Poke(ref string) int {
	p.refs = append(p.refs, ref)
	return 1
}

func TestRegistryWebhook(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		auth      string
		body      string
		wantCode  int
		wantPoked []string
	}{
		{name: "distribution push events", method: http.MethodPost, auth: "Bearer s3cret", wantCode: http.StatusOK,
			body: `{"events":[{"action":"push","target":{"repository":"team/app","tag":"stable"},"request":{"host":"reg:5000"}},
			{"action":"pull","target":{"repository":"team/app","tag":"stable"},"request":{"host":"reg:5000"}},
			{"action":"push","target":{"repository":"team/app","digest":"sha256:1"},"request":{"host":"reg:5000"}}]}`,
			wantPoked: []string{"reg:5000/team/app:stable"}},
		{name: "a plain list", method: http.MethodPost, auth: "Bearer s3cret", wantCode: http.StatusOK,
			body:      `{"images":["registry.example.com/a:1","registry.example.com/b:2"]}`,
			wantPoked: []string{"registry.example.com/a:1", "registry.example.com/b:2"}},
		{name: "no secret", method: http.MethodPost, body: `{"images":["x:1"]}`, wantCode: http.StatusUnauthorized},
		{name: "wrong secret", method: http.MethodPost, auth: "Bearer guess", body: `{"images":["x:1"]}`, wantCode: http.StatusUnauthorized},
		{name: "not JSON", method: http.MethodPost, auth: "Bearer s3cret", body: `push!`, wantCode: http.StatusBadRequest},
		{name: "GET", method: http.MethodGet, auth: "Bearer s3cret", wantCode: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &recordingPoker{}
			h, err := NewRegistryWebhook("s3cret", p, logrus.NewEntry(logrus.New()))
			require.NoError(t, err)
			req := httptest.NewRequest(tt.method, RegistryWebhookPath, strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			assert.Equal(t, tt.wantPoked, p.refs)
		})
	}
	_, err := NewRegistryWebhook("", &recordingPoker{}, logrus.NewEntry(logrus.New()))
	assert.Error(t, err, "an empty secret is refused")
}

type countingResolver struct{ calls atomic.Int32 }

func (r *countingResolver) Resolve(context.Context, string, authn.Keychain) (string, error) {
	r.calls.Add(1)
	return "sha256:" + strings.Repeat("a", 64), nil
}

// A notification wakes the real watcher's poller at once, long before its interval.
func TestRegistryWebhookWakesThePoller(t *testing.T) {
	resolver := &countingResolver{}
	w := images.NewWatcher(images.WatcherOptions{Interval: time.Hour, Resolver: resolver}, func(string) {})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	w.SetWatches("ns/web", []images.Watch{{Ref: "reg.example:5000/team/app:stable"}})
	require.Eventually(t, func() bool { return resolver.calls.Load() == 1 }, 10*time.Second, 10*time.Millisecond, "the first check")

	h, err := NewRegistryWebhook("s3cret", w, logrus.NewEntry(logrus.New()))
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, RegistryWebhookPath, strings.NewReader(
		`{"events":[{"action":"push","target":{"repository":"team/app","tag":"stable"},"request":{"host":"reg.example:5000"}}]}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"tags":1,"woken":1}`, rec.Body.String())
	require.Eventually(t, func() bool { return resolver.calls.Load() == 2 }, 10*time.Second, 10*time.Millisecond,
		"the push woke the poller, whose interval is an hour")
}
