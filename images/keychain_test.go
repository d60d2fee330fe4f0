package images

import (
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configJSON is a kubernetes.io/dockerconfigjson secret.
func configJSON(name, data string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(data)},
	}
}

// dockercfg is a legacy kubernetes.io/dockercfg secret.
func dockercfg(name, data string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Type:       corev1.SecretTypeDockercfg,
		Data:       map[string][]byte{corev1.DockerConfigKey: []byte(data)},
	}
}

// authOf is the base64 auth field of user:pass.
func authOf(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// auths is a dockerconfigjson body with one registry key and an auth field.
func auths(key, user, pass string) string {
	return fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, key, authOf(user, pass))
}

// keychainCase is one case of TestKeychainFromSecrets.
type keychainCase struct {
	name     string
	secrets  []corev1.Secret
	image    string // the repository the credentials are for
	wantUser string // "" means anonymous
	wantPass string
}

// keychainCases are TestKeychainFromSecrets's cases.
var keychainCases = []keychainCase{
	{
		name:    "dockerconfigjson with auth",
		secrets: []corev1.Secret{configJSON("a", auths("reg.example.com", "robot", "pw1"))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw1",
	},
	{
		name:    "dockerconfigjson with username and password",
		secrets: []corev1.Secret{configJSON("a", `{"auths":{"reg.example.com":{"username":"robot","password":"pw2","email":"x@example.com"}}}`)},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw2",
	},
	{
		name:    "auth wins over username and password",
		secrets: []corev1.Secret{configJSON("a", fmt.Sprintf(`{"auths":{"reg.example.com":{"auth":%q,"username":"other","password":"other"}}}`, authOf("robot", "pw3")))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw3",
	},
	{
		name:    "legacy dockercfg",
		secrets: []corev1.Secret{dockercfg("a", fmt.Sprintf(`{"reg.example.com":{"auth":%q}}`, authOf("robot", "pw4")))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw4",
	},
	{
		name:    "URL key with the API version",
		secrets: []corev1.Secret{configJSON("a", auths("https://reg.example.com/v1/", "robot", "pw5"))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw5",
	},
	{
		name:    "key with a port matches that port",
		secrets: []corev1.Secret{configJSON("a", auths("http://reg.example.com:5000", "robot", "pw6"))},
		image:   "reg.example.com:5000/team/app", wantUser: "robot", wantPass: "pw6",
	},
	{
		name:    "key with a port does not match another port",
		secrets: []corev1.Secret{configJSON("a", auths("reg.example.com:5000", "robot", "pw"))},
		image:   "reg.example.com:5001/team/app",
	},
	{
		name:    "key without a port does not match a registry with one",
		secrets: []corev1.Secret{configJSON("a", auths("reg.example.com", "robot", "pw"))},
		image:   "reg.example.com:5000/team/app",
	},
	{
		name:    "Docker Hub key of the docker CLI",
		secrets: []corev1.Secret{configJSON("a", auths("https://index.docker.io/v1/", "robot", "pw7"))},
		image:   "docker.io/library/nginx", wantUser: "robot", wantPass: "pw7",
	},
	{
		name:    "docker.io key for a short Docker Hub name",
		secrets: []corev1.Secret{configJSON("a", auths("docker.io", "robot", "pw8"))},
		image:   "nginx", wantUser: "robot", wantPass: "pw8",
	},
	{
		name:    "registry-1.docker.io key",
		secrets: []corev1.Secret{configJSON("a", auths("registry-1.docker.io", "robot", "pw9"))},
		image:   "index.docker.io/team/app", wantUser: "robot", wantPass: "pw9",
	},
	{
		name:    "no matching registry is anonymous",
		secrets: []corev1.Secret{configJSON("a", auths("other.example.com", "robot", "pw"))},
		image:   "reg.example.com/team/app",
	},
	{
		name:    "path prefix matches below it",
		secrets: []corev1.Secret{configJSON("a", auths("reg.example.com/team", "robot", "pw10"))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw10",
	},
	{
		name:    "path prefix does not match a sibling",
		secrets: []corev1.Secret{configJSON("a", auths("reg.example.com/team", "robot", "pw"))},
		image:   "reg.example.com/teams/app",
	},
	{
		name: "longer path wins",
		secrets: []corev1.Secret{
			configJSON("a", auths("reg.example.com", "host", "pw")),
			configJSON("b", auths("reg.example.com/team", "team", "pw11")),
		},
		image: "reg.example.com/team/app", wantUser: "team", wantPass: "pw11",
	},
	{
		name:    "wildcard host",
		secrets: []corev1.Secret{configJSON("a", auths("*.example.com", "robot", "pw12"))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw12",
	},
	{
		name:    "wildcard needs the same number of labels",
		secrets: []corev1.Secret{configJSON("a", auths("*.example.com", "robot", "pw"))},
		image:   "example.com/team/app",
	},
	{
		name: "exact host wins over a wildcard",
		secrets: []corev1.Secret{
			configJSON("a", auths("*.example.com", "glob", "pw")),
			configJSON("b", auths("reg.example.com", "exact", "pw13")),
		},
		image: "reg.example.com/team/app", wantUser: "exact", wantPass: "pw13",
	},
	{
		name: "first secret wins on the same key",
		secrets: []corev1.Secret{
			configJSON("a", auths("reg.example.com", "first", "pw14")),
			configJSON("b", auths("reg.example.com", "second", "pw")),
		},
		image: "reg.example.com/team/app", wantUser: "first", wantPass: "pw14",
	},
	{
		name:    "upper-case key",
		secrets: []corev1.Secret{configJSON("a", auths("REG.Example.com", "robot", "pw15"))},
		image:   "reg.example.com/team/app", wantUser: "robot", wantPass: "pw15",
	},
	{
		name:  "no secrets",
		image: "reg.example.com/team/app",
	},
}

func TestKeychainFromSecrets(t *testing.T) {
	tests := keychainCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, errs := KeychainFromSecrets(tt.secrets)
			require.Empty(t, errs)
			repo, err := name.NewRepository(tt.image)
			require.NoError(t, err)

			auth, err := k.Resolve(repo)
			require.NoError(t, err)
			cfg, err := auth.Authorization()
			require.NoError(t, err)
			if tt.wantUser == "" {
				assert.Equal(t, authn.Anonymous, auth)
				return
			}
			assert.Equal(t, tt.wantUser, cfg.Username)
			assert.Equal(t, tt.wantPass, cfg.Password)
		})
	}
}

func TestKeychainFromSecretsErrors(t *testing.T) {
	const password = "hunter2-secret"
	tests := []struct {
		name    string
		secret  corev1.Secret
		wantErr string
	}{
		{
			name:    "broken JSON",
			secret:  configJSON("broken", `{"auths":{"reg.example.com":{"password":"`+password+`"x}}}`),
			wantErr: "not valid JSON",
		},
		{
			name:    "wrong JSON type",
			secret:  configJSON("broken", `{"auths":{"reg.example.com":{"password":7}}}`),
			wantErr: "is a JSON number",
		},
		{
			name:    "broken dockercfg",
			secret:  dockercfg("broken", `{"reg.example.com":`+password),
			wantErr: "not valid JSON",
		},
		{
			name:    "no auths object",
			secret:  configJSON("broken", `{"reg.example.com":{"password":"`+password+`"}}`),
			wantErr: "no auths object",
		},
		{
			name:    "auth is not base64",
			secret:  configJSON("broken", `{"auths":{"reg.example.com":{"auth":"`+password+`!"}}}`),
			wantErr: "not valid base64",
		},
		{
			name:    "auth without a colon",
			secret:  configJSON("broken", `{"auths":{"reg.example.com":{"auth":"`+base64.StdEncoding.EncodeToString([]byte(password))+`"}}}`),
			wantErr: "does not decode to user:password",
		},
		{
			name:    "entry without credentials",
			secret:  configJSON("broken", `{"auths":{"reg.example.com":{"email":"x@example.com"}}}`),
			wantErr: "has no credentials",
		},
		{
			name:    "missing key",
			secret:  corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "broken"}, Type: corev1.SecretTypeDockerConfigJson},
			wantErr: "has no .dockerconfigjson key",
		},
		{
			name: "not a pull secret",
			secret: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "broken"}, Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(auths("reg.example.com", "robot", password))}},
			wantErr: `has type "Opaque"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := configJSON("good", auths("reg.example.com", "robot", "pw"))
			k, errs := KeychainFromSecrets([]corev1.Secret{tt.secret, good})

			require.Len(t, errs, 1)
			assert.Contains(t, errs[0].Error(), "pull secret team/broken")
			assert.Contains(t, errs[0].Error(), tt.wantErr)
			assert.NotContains(t, errs[0].Error(), password)
			assert.NotContains(t, errs[0].Error(), "hunter")

			// The other secret still counts.
			repo, err := name.NewRepository("reg.example.com/team/app")
			require.NoError(t, err)
			auth, err := k.Resolve(repo)
			require.NoError(t, err)
			cfg, err := auth.Authorization()
			require.NoError(t, err)
			assert.Equal(t, "robot", cfg.Username)
		})
	}
}

func TestKeychainNeverPrintsSecrets(t *testing.T) {
	const password = "hunter2-secret"
	k, errs := KeychainFromSecrets([]corev1.Secret{
		configJSON("pull", auths("reg.example.com", "robot", password)),
		configJSON("token", `{"auths":{"tok.example.com":{"identitytoken":"`+password+`"}}}`),
	})
	require.Empty(t, errs)
	repo, err := name.NewRepository("reg.example.com/team/app")
	require.NoError(t, err)
	auth, err := k.Resolve(repo)
	require.NoError(t, err)

	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, v := range []any{k, auth} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, password, verb)
			assert.NotContains(t, out, authOf("robot", password), verb)
		}
	}
	assert.Contains(t, fmt.Sprint(auth), "reg.example.com from pull secret team/pull")
}
