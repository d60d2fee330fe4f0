package webui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	shfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

// testServer serves a model of the given objects with token "secret" on an httptest
// server whose Host is the only one allowed.
func testServer(t *testing.T, kubeObjs []runtime.Object, dcs ...*v1alpha1.DeploymentConfig) (*httptest.Server, *Server) {
	t.Helper()
	var shObjs []runtime.Object
	for _, dc := range dcs {
		shObjs = append(shObjs, dc)
	}
	kube, sh := k8sfake.NewClientset(kubeObjs...), shfake.NewSimpleClientset(shObjs...)
	model, err := NewModel(kube, sh, "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, model.Run(ctx))
	srv := &Server{Kube: kube, Stagehand: sh, Model: model, Token: "secret"}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	srv.Hosts = LoopbackHosts(strings.TrimPrefix(ts.URL, "http://"))
	return ts, srv
}

func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, url string, mutate func(*http.Request)) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if mutate != nil {
		mutate(req)
	}
	resp, err := noRedirects().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func withCookie(token string) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: CookieName, Value: token}) }
}

func TestGuardRefusesWithoutTheTokenAndMovesItIntoACookie(t *testing.T) {
	ts, _ := testServer(t, nil)

	resp := get(t, ts.URL+"/", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token")
	assert.Equal(t, http.StatusUnauthorized, get(t, ts.URL+"/api/events", withCookie("wrong")).StatusCode, "a wrong token")
	assert.Equal(t, http.StatusUnauthorized, get(t, ts.URL+"/?token=wrong", nil).StatusCode)

	resp = get(t, ts.URL+"/?token=secret", nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/", resp.Header.Get("Location"), "the URL loses the token")
	cookie := resp.Cookies()[0]
	assert.Equal(t, CookieName, cookie.Name)
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)

	resp = get(t, ts.URL+"/", withCookie("secret"))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
}

func TestGuardRefusesAnotherHostAndCrossOriginWrites(t *testing.T) {
	ts, _ := testServer(t, nil)
	resp := get(t, ts.URL+"/", func(r *http.Request) { withCookie("secret")(r); r.Host = "evil.example:3100" })
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "DNS rebinding: an unknown Host")

	post := func(origin string) int {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/api/action", strings.NewReader(`{"verb":"pause"}`))
		require.NoError(t, err)
		withCookie("secret")(req)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := noRedirects().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, post(""), "no Origin")
	assert.Equal(t, http.StatusForbidden, post("http://evil.example"), "another origin")
	assert.Equal(t, http.StatusBadRequest, post(ts.URL), "same origin: the action itself is judged (no namespace and name)")
}

func TestLoopbackHosts(t *testing.T) {
	assert.Equal(t, []string{"127.0.0.1:3100", "localhost:3100", "127.0.0.1:3100", "[::1]:3100"}, LoopbackHosts("127.0.0.1:3100"))
	assert.Nil(t, LoopbackHosts("0.0.0.0:3100"), "a non-loopback address: any Host, the token guards")
}

func TestEventsStreamsTheListAndItsChanges(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "web:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Status.LatestVersion = 1
	rs := testutil.Revision(dc, 1, 2, v1alpha1.RevisionPhaseRunning)
	ts, srv := testServer(t, []runtime.Object{rs}, dc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/events", nil)
	require.NoError(t, err)
	withCookie("secret")(req)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				return data
			}
		}
		return ""
	}
	first := next()
	assert.Contains(t, first, `"name":"web"`)
	assert.Contains(t, first, `"phase":"Running"`)

	done := rs.DeepCopy()
	done.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseComplete)
	_, err = srv.Kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, done, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Contains(t, next(), `"phase":"Complete"`, "the change comes without a reload")
}
