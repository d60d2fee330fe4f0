package localcluster

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestAuthProxy checks which requests the proxy lets through to the registry behind it,
// here a stand-in that records what reaches it.
func TestAuthProxy(t *testing.T) {
	type seen struct {
		path, authorization string
	}
	reached := make(chan seen, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- seen{path: r.URL.Path, authorization: r.Header.Get("Authorization")}
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		_, _ = io.WriteString(w, "{}")
	}))
	defer backend.Close()

	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	require.NoError(t, writeHtpasswd(htpasswd, RegistryUser, "s3cret"))
	proxy, err := newAuthProxy(proxyConfig{Backend: backend.URL, Htpasswd: htpasswd,
		ProtectedPrefix: RegistryProtectedPrefix}, logrus.NewEntry(logrus.New()))
	require.NoError(t, err)
	front := httptest.NewServer(proxy)
	defer front.Close()

	const (
		none  = ""
		good  = RegistryUser + ":s3cret"
		wrong = RegistryUser + ":guess"
	)
	tests := []struct {
		name, method, path, creds string
		wantStatus                int
	}{
		{"ping without credentials is challenged", http.MethodGet, "/v2/", none, http.StatusUnauthorized},
		{"ping with credentials reaches the registry", http.MethodGet, "/v2/", good, http.StatusOK},
		{"ping with wrong credentials", http.MethodGet, "/v2/", wrong, http.StatusUnauthorized},
		{"open repository, anonymous", http.MethodGet, "/v2/app/manifests/stable", none, http.StatusOK},
		{"open repository, with credentials", http.MethodPut, "/v2/app/manifests/stable", good, http.StatusOK},
		{"open repository, wrong credentials", http.MethodGet, "/v2/app/manifests/stable", wrong, http.StatusUnauthorized},
		{"protected repository, anonymous", http.MethodGet, "/v2/private/app/manifests/stable", none, http.StatusUnauthorized},
		{"protected repository, anonymous HEAD", http.MethodHead, "/v2/private/app/manifests/stable", none, http.StatusUnauthorized},
		{"protected repository, anonymous upload", http.MethodPost, "/v2/private/app/blobs/uploads/", none, http.StatusUnauthorized},
		{"protected repository, wrong credentials", http.MethodGet, "/v2/private/app/manifests/stable", wrong, http.StatusUnauthorized},
		{"protected repository, with credentials", http.MethodHead, "/v2/private/app/manifests/stable", good, http.StatusOK},
		{"mount from a protected repository, anonymous", http.MethodPost, "/v2/app/blobs/uploads/?mount=sha256:00&from=private/app", none, http.StatusUnauthorized},
		{"catalog, anonymous", http.MethodGet, "/v2/_catalog", none, http.StatusUnauthorized},
		{"a name that only starts like the prefix is open", http.MethodGet, "/v2/privateer/manifests/stable", none, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, front.URL+tt.path, nil)
			require.NoError(t, err)
			if tt.creds != "" {
				req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(tt.creds)))
			}
			resp, err := front.Client().Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tt.wantStatus, resp.StatusCode)

			if tt.wantStatus == http.StatusUnauthorized {
				assert.Equal(t, `Basic realm="stagehand-localcluster"`, resp.Header.Get("WWW-Authenticate"))
				if tt.method != http.MethodHead {
					assert.Contains(t, string(body), `"code":"UNAUTHORIZED"`)
				}
				select {
				case s := <-reached:
					t.Errorf("a refused request reached the registry: %+v", s)
				default:
				}
				return
			}
			select {
			case s := <-reached:
				assert.Empty(t, s.authorization, "the credentials are not passed on")
			default:
				t.Error("the request did not reach the registry")
			}
		})
	}
}

func TestReadHtpasswdRejectsOtherHashes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	require.NoError(t, writeFileAtomic(path, []byte("stagehand:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n"), 0o600))
	_, err := readHtpasswd(path)
	assert.ErrorContains(t, err, "bcrypt")
}

func TestPullSecret(t *testing.T) {
	ri := RegistryInfo{Address: "127.0.0.1:5000", Username: "stagehand", Password: "pw", ProtectedPrefix: "private/"}
	assert.Equal(t, "127.0.0.1:5000/app:stable", ri.Image("app:stable"))
	assert.Equal(t, "127.0.0.1:5000/private/app:stable", ri.PrivateImage("app:stable"))

	s, err := ri.PullSecret("ns", "pull")
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, s.Type)
	assert.Equal(t, "ns", s.Namespace)
	assert.Equal(t, "pull", s.Name)
	var doc struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	require.NoError(t, json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &doc))
	entry := doc.Auths["127.0.0.1:5000"]
	assert.Equal(t, "stagehand", entry.Username)
	assert.Equal(t, "pw", entry.Password)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("stagehand:pw")), entry.Auth)
}
