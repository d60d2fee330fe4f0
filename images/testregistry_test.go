package images

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
)

// pushAgent marks the requests of the test's own pushes, which the registry neither
// records nor intercepts.
const pushAgent = "images-test-push"

// testRegistry is go-containerregistry's in-process registry behind an HTTP server that
// records the requests of the code under test and lets a test answer some of them.
type testRegistry struct {
	host string // 127.0.0.1:port

	mu        sync.Mutex
	requests  []seenRequest
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

// seenRequest is one request the registry received.
type seenRequest struct {
	method string
	path   string
	at     time.Time
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.UserAgent(), pushAgent) {
			inner.ServeHTTP(w, r)
			return
		}
		reg.mu.Lock()
		reg.requests = append(reg.requests, seenRequest{method: r.Method, path: r.URL.Path, at: time.Now()})
		intercept := reg.intercept
		reg.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	reg.host = strings.TrimPrefix(srv.URL, "http://")
	return reg
}

// ref is a reference to repoTag (team/app:stable) in the registry.
func (reg *testRegistry) ref(repoTag string) string { return reg.host + "/" + repoTag }

// setIntercept answers the requests for which fn returns true; nil stops intercepting.
func (reg *testRegistry) setIntercept(fn func(w http.ResponseWriter, r *http.Request) bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.intercept = fn
}

// manifestRequests are the recorded manifest requests (HEAD and GET).
func (reg *testRegistry) manifestRequests() []seenRequest {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var out []seenRequest
	for _, r := range reg.requests {
		if strings.Contains(r.path, "/manifests/") {
			out = append(out, r)
		}
	}
	return out
}

// countRequests counts the recorded requests with a method ("" for any) until a time.
func (reg *testRegistry) countRequests(method string, until time.Time) int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	n := 0
	for _, r := range reg.requests {
		if (method == "" || r.method == method) && !r.at.After(until) {
			n++
		}
	}
	return n
}

// pushRandom pushes a new random image to repoTag and returns its digest.
func (reg *testRegistry) pushRandom(t *testing.T, repoTag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	return reg.push(t, repoTag, img)
}

// push pushes an image to repoTag and returns its digest.
func (reg *testRegistry) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	tag, err := name.NewTag(reg.ref(repoTag))
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img, remote.WithUserAgent(pushAgent)))
	digest, err := img.Digest()
	require.NoError(t, err)
	return digest.String()
}

// pushIndex pushes a random image index to repoTag and returns its digest.
func (reg *testRegistry) pushIndex(t *testing.T, repoTag string) string {
	t.Helper()
	idx, err := random.Index(128, 1, 2)
	require.NoError(t, err)
	tag, err := name.NewTag(reg.ref(repoTag))
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(tag, idx, remote.WithUserAgent(pushAgent)))
	digest, err := idx.Digest()
	require.NoError(t, err)
	return digest.String()
}

// isManifest reports whether a request is for a manifest of repo.
func isManifest(r *http.Request, repo string) bool {
	return strings.HasPrefix(r.URL.Path, "/v2/"+repo+"/manifests/")
}

// writeRegistryError answers with a status and, except for HEAD, a registry error body.
func writeRegistryError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, `{"errors":[{"code":"`+code+`","message":"`+message+`"}]}`)
	}
}

// requireBasicAuth is an intercept that demands user:pass for the version check and for
// the repository private, as a registry with basic authentication does; other
// repositories stay public.
func requireBasicAuth(user, pass string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v2/" && !strings.HasPrefix(r.URL.Path, "/v2/private/") {
			return false
		}
		if u, p, ok := r.BasicAuth(); ok && u == user && p == pass {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		writeRegistryError(w, r, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return true
	}
}
