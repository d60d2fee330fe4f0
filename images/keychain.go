package images

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// KeychainFromSecrets builds a keychain from pull secrets: kubernetes.io/dockerconfigjson
// secrets (key .dockerconfigjson) and legacy kubernetes.io/dockercfg ones (key .dockercfg).
// Secrets of other types and broken entries are skipped and reported in the returned
// errors, which name the secret and the registry but never the secret content.
//
// A registry matches an entry the way the kubelet matches it (see registryPattern): by
// host, by port when the entry names one, and by path prefix when the entry names one.
// Entries written as URLs (https://host/v1/) count as their host, and docker.io,
// index.docker.io and registry-1.docker.io are one registry. When several entries match,
// the most specific wins: an exact host before a wildcard, a longer path before a shorter
// one, then the first secret in the order given. A registry that no entry matches is
// accessed anonymously.
func KeychainFromSecrets(secrets []corev1.Secret) (authn.Keychain, []error) {
	k := &secretKeychain{}
	var errs []error
	for i := range secrets {
		s := &secrets[i]
		source := "pull secret " + s.Namespace + "/" + s.Name
		var auths map[string]dockerConfigEntry
		var err error
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			auths, err = parseDockerConfigJSON(s.Data[corev1.DockerConfigJsonKey])
		case corev1.SecretTypeDockercfg:
			auths, err = parseDockercfg(s.Data[corev1.DockerConfigKey])
		default:
			err = fmt.Errorf("has type %q; only %s and %s secrets hold registry credentials",
				s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
			continue
		}
		// Sorted, so that the keychain does not depend on map order.
		keys := make([]string, 0, len(auths))
		for key := range auths {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			e, err := newKeychainEntry(key, auths[key], source, len(k.entries))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", source, err))
				continue
			}
			k.entries = append(k.entries, e)
		}
	}
	return k, errs
}

// dockerConfigEntry is one registry of a docker config file.
type dockerConfigEntry struct {
	Auth          string `json:"auth,omitempty"`
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// parseDockerConfigJSON reads the .dockerconfigjson format: {"auths": {registry: entry}}.
func parseDockerConfigJSON(data []byte) (map[string]dockerConfigEntry, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("has no %s key", corev1.DockerConfigJsonKey)
	}
	var config struct {
		Auths map[string]dockerConfigEntry `json:"auths"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		return nil, jsonError(corev1.DockerConfigJsonKey, err)
	}
	if config.Auths == nil {
		return nil, fmt.Errorf("%s has no auths object", corev1.DockerConfigJsonKey)
	}
	return config.Auths, nil
}

// parseDockercfg reads the legacy .dockercfg format: {registry: entry}.
func parseDockercfg(data []byte) (map[string]dockerConfigEntry, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("has no %s key", corev1.DockerConfigKey)
	}
	var auths map[string]dockerConfigEntry
	if err := json.Unmarshal(data, &auths); err != nil {
		return nil, jsonError(corev1.DockerConfigKey, err)
	}
	return auths, nil
}

// jsonError describes a JSON error by position and field only. The JSON decoder's own
// messages quote the offending character, which may be part of a password.
func jsonError(key string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s is not valid JSON (syntax error at byte %d)", key, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%s is not a docker config (field %q is a JSON %s, not %s)", key, typ.Field, typ.Value, jsonKind(typ.Type))
	}
	return fmt.Errorf("%s is not valid JSON", key)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// keychainEntry is the credentials of one registry pattern.
type keychainEntry struct {
	pattern registryPattern
	auth    *secretAuth
	order   int
}

// newKeychainEntry parses one registry entry. The decoded auth field, when present, wins
// over username and password, as in the docker CLI.
func newKeychainEntry(key string, e dockerConfigEntry, source string, order int) (keychainEntry, error) {
	pattern, err := parseRegistryPattern(key)
	if err != nil {
		return keychainEntry{}, err
	}
	cfg := authn.AuthConfig{
		Username:      e.Username,
		Password:      e.Password,
		IdentityToken: e.IdentityToken,
		RegistryToken: e.RegistryToken,
	}
	if e.Auth != "" {
		raw := strings.TrimSpace(e.Auth)
		decoded, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			decoded, err = base64.RawStdEncoding.DecodeString(raw)
		}
		if err != nil {
			return keychainEntry{}, fmt.Errorf("the auth field of registry %q is not valid base64", key)
		}
		user, pass, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return keychainEntry{}, fmt.Errorf("the auth field of registry %q does not decode to user:password", key)
		}
		cfg.Username, cfg.Password = user, pass
	}
	if cfg.Username == "" && cfg.Password == "" && cfg.IdentityToken == "" && cfg.RegistryToken == "" {
		return keychainEntry{}, fmt.Errorf("registry %q has no credentials (no auth, username/password or token)", key)
	}
	return keychainEntry{pattern: pattern, auth: &secretAuth{cfg: cfg, source: source, registry: key}, order: order}, nil
}

// secretKeychain is the keychain of a set of pull secrets.
type secretKeychain struct {
	entries []keychainEntry
}

var _ authn.Keychain = &secretKeychain{}

// Resolve returns the credentials of the most specific entry that matches the resource
// (a repository or a registry), or anonymous access when none does.
func (k *secretKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	host := res.RegistryStr()
	repo := strings.TrimPrefix(strings.TrimPrefix(res.String(), host), "/")
	var best *keychainEntry
	for i := range k.entries {
		e := &k.entries[i]
		if e.pattern.matches(host, repo) && (best == nil || e.pattern.moreSpecific(best.pattern)) {
			best = e
		}
	}
	if best == nil {
		return authn.Anonymous, nil
	}
	return best.auth, nil
}

// String names the registries and secrets of the keychain, never their credentials.
func (k *secretKeychain) String() string {
	names := make([]string, 0, len(k.entries))
	for _, e := range k.entries {
		names = append(names, e.auth.String())
	}
	return fmt.Sprintf("pull-secret keychain [%s]", strings.Join(names, ", "))
}

// GoString is String, so that %#v does not print the credentials either.
func (k *secretKeychain) GoString() string { return k.String() }

// secretAuth is the authenticator of one pull-secret entry.
type secretAuth struct {
	cfg      authn.AuthConfig
	source   string
	registry string
}

var _ authn.Authenticator = &secretAuth{}

// Authorization returns a copy of the credentials.
func (a *secretAuth) Authorization() (*authn.AuthConfig, error) {
	cfg := a.cfg
	return &cfg, nil
}

// String names the registry and the secret, never the credentials.
func (a *secretAuth) String() string {
	return fmt.Sprintf("%s from %s", a.registry, a.source)
}

// GoString is String, so that %#v does not print the credentials either.
func (a *secretAuth) GoString() string { return a.String() }
