package images

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resolveCase is one case of TestResolve.
type resolveCase struct {
	name string
	// setup pushes what the case needs and returns the reference to resolve and the
	// digest it must resolve to ("" when it must fail).
	setup     func(t *testing.T, reg *testRegistry) (ref, digest string)
	intercept func(w http.ResponseWriter, r *http.Request) bool
	wantErr   []string // substrings of the error
	wantGET   bool     // whether the resolver had to GET the manifest
}

// resolveCases are TestResolve's cases.
var resolveCases = []resolveCase{
	{
		name: "image manifest",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/app:stable"), reg.pushRandom(t, "team/app:stable")
		},
	},
	{
		name: "image index",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/multi:stable"), reg.pushIndex(t, "team/multi:stable")
		},
	},
	{
		name: "HEAD not allowed falls back to GET",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/app:stable"), reg.pushRandom(t, "team/app:stable")
		},
		intercept: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodHead && isManifest(r, "team/app") {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return true
			}
			return false
		},
		wantGET: true,
	},
	{
		name: "HEAD without a digest header falls back to GET",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/app:stable"), reg.pushRandom(t, "team/app:stable")
		},
		intercept: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodHead && isManifest(r, "team/app") {
				w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
				w.Header().Set("Content-Length", "10")
				w.WriteHeader(http.StatusOK)
				return true
			}
			return false
		},
		wantGET: true,
	},
	{
		name: "unknown tag",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			reg.pushRandom(t, "team/app:stable")
			return reg.ref("team/app:missing"), ""
		},
		wantErr: []string{"team/app:missing", "404 Not Found", "MANIFEST_UNKNOWN", "check that the repository and the tag exist"},
		wantGET: true,
	},
	{
		name: "unknown repository",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/nothing:stable"), ""
		},
		wantErr: []string{"team/nothing:stable", "404 Not Found", "NAME_UNKNOWN"},
		wantGET: true,
	},
	{
		name: "server error is not retried with GET",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/app:stable"), ""
		},
		intercept: func(w http.ResponseWriter, r *http.Request) bool {
			if isManifest(r, "team/app") {
				w.WriteHeader(http.StatusInternalServerError)
				return true
			}
			return false
		},
		wantErr: []string{"team/app:stable", "500 Internal Server Error"},
	},
	{
		name: "digest reference",
		setup: func(t *testing.T, reg *testRegistry) (string, string) {
			return reg.ref("team/app@sha256:" + sixtyFourZeros), ""
		},
		wantErr: []string{"digest reference, not a tag"},
	},
}

func TestResolve(t *testing.T) {
	tests := resolveCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			ref, want := tt.setup(t, reg)
			reg.setIntercept(tt.intercept)

			got, err := NewResolver(ResolverOptions{RegistryQPS: -1}).Resolve(context.Background(), ref, nil)

			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
			} else {
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			assert.Equal(t, tt.wantGET, reg.countRequests(http.MethodGet, time.Now()) > pings(reg), "GET of the manifest")
		})
	}
}

const sixtyFourZeros = "0000000000000000000000000000000000000000000000000000000000000000"

// pings counts the version checks the registry received.
func pings(reg *testRegistry) int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	n := 0
	for _, r := range reg.requests {
		if r.path == "/v2/" {
			n++
		}
	}
	return n
}

func TestResolveBasicAuth(t *testing.T) {
	reg := newTestRegistry(t)
	want := reg.pushRandom(t, "private/app:stable")
	reg.setIntercept(requireBasicAuth("robot", "s3cret-pass"))

	secret := func(user, pass string) corev1.Secret {
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		return corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pull"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
				`{"auths":{"` + reg.host + `":{"auth":"` + auth + `"}}}`)},
		}
	}
	keychain := func(t *testing.T, s corev1.Secret) authn.Keychain {
		k, errs := KeychainFromSecrets([]corev1.Secret{s})
		require.Empty(t, errs)
		return k
	}

	tests := []struct {
		name     string
		keychain authn.Keychain
		wantErr  bool
	}{
		{name: "matching pull secret", keychain: keychain(t, secret("robot", "s3cret-pass"))},
		{name: "anonymous", wantErr: true},
		{name: "wrong password", keychain: keychain(t, secret("robot", "wrong-pass")), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewResolver(ResolverOptions{}).Resolve(context.Background(), reg.ref("private/app:stable"), tt.keychain)
			if !tt.wantErr {
				require.NoError(t, err)
				assert.Equal(t, want, got)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "private/app:stable")
			assert.Contains(t, err.Error(), "401 Unauthorized")
			assert.Contains(t, err.Error(), "check the pull secret for "+reg.host)
			assert.NotContains(t, err.Error(), "s3cret-pass")
			assert.NotContains(t, err.Error(), "wrong-pass")
			assert.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString([]byte("robot:wrong-pass")))
		})
	}
}

func TestResolveRetryAfter(t *testing.T) {
	reg := newTestRegistry(t)
	reg.pushRandom(t, "team/app:stable")
	reg.pushRandom(t, "team/other:stable")
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if isManifest(r, "team/app") {
			w.Header().Set("Retry-After", "2")
			writeRegistryError(w, r, http.StatusTooManyRequests, "TOOMANYREQUESTS", "slow down")
			return true
		}
		return false
	})
	res := NewResolver(ResolverOptions{RegistryQPS: -1})

	_, err := res.Resolve(context.Background(), reg.ref("team/app:stable"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "429 Too Many Requests")
	wait, ok := RetryAfter(err)
	require.True(t, ok, "RetryAfter of %v", err)
	assert.InDelta(t, 2*time.Second, wait, float64(time.Second))
	assert.Empty(t, reg.manifestRequests()[1:], "no GET after a 429")

	// The whole registry waits: a check that may not wait that long fails without asking.
	before := len(reg.manifestRequests())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = res.Resolve(ctx, reg.ref("team/other:stable"), nil)
	require.Error(t, err)
	_, ok = RetryAfter(err)
	assert.True(t, ok, "RetryAfter of %v", err)
	assert.Len(t, reg.manifestRequests(), before, "no request while the registry asked to wait")

	_, ok = RetryAfter(context.Canceled)
	assert.False(t, ok)
}

func TestResolveTooManyRequestsWithoutRetryAfter(t *testing.T) {
	reg := newTestRegistry(t)
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if isManifest(r, "team/app") {
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	_, err := NewResolver(ResolverOptions{}).Resolve(context.Background(), reg.ref("team/app:stable"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "429 Too Many Requests")
	_, ok := RetryAfter(err)
	assert.False(t, ok)
}

func TestResolveSessions(t *testing.T) {
	reg := newTestRegistry(t)
	want := reg.pushRandom(t, "private/app:stable")
	res := NewResolver(ResolverOptions{RegistryQPS: -1})
	ref := reg.ref("private/app:stable")

	for range 3 {
		got, err := res.Resolve(context.Background(), ref, nil)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	assert.Equal(t, 1, pings(reg), "one version check for three resolutions")
	assert.Len(t, reg.manifestRequests(), 3)

	// A missing tag is an answer of the registry: the session holds.
	_, err := res.Resolve(context.Background(), reg.ref("private/app:missing"), nil)
	require.Error(t, err)
	assert.Equal(t, 1, pings(reg))

	// An authentication failure drops the session: the next resolution starts afresh.
	reg.setIntercept(requireBasicAuth("robot", "pw"))
	_, err = res.Resolve(context.Background(), ref, nil)
	require.Error(t, err)
	assert.Equal(t, 1, pings(reg))
	_, err = res.Resolve(context.Background(), ref, nil)
	require.Error(t, err)
	assert.Equal(t, 2, pings(reg))
}
