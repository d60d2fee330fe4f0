package images

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// dockerHub is the name Docker Hub goes by here; docker.io and registry-1.docker.io are
// aliases of it.
const dockerHub = "index.docker.io"

// registryPattern is the registry part of a pull-secret key, which selects the images
// the key's credentials apply to. Like the kubelet, it matches
//
//   - the host, label by label, where a label may be a glob (*.example.com);
//   - the port: a key with a port matches only that port, a key without one only
//     registries without one;
//   - the path: a key with a path (reg.example.com/team) matches only repositories at or
//     below it.
//
// A key may be a URL (https://reg.example.com/v1/): the scheme is ignored, and so is a
// path that is only the API version (v1 or v2), which the docker CLI writes for Docker
// Hub.
type registryPattern struct {
	host []string // the labels of the host, lower case
	port string
	path []string // the segments of the repository prefix
	glob bool     // whether a host label is a glob
}

// parseRegistryPattern parses a pull-secret key.
func parseRegistryPattern(key string) (registryPattern, error) {
	raw := strings.TrimSpace(key)
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return registryPattern{}, fmt.Errorf("registry key %q is not a registry host, host:port or URL", key)
	}
	p := registryPattern{host: strings.Split(canonicalHost(u.Hostname()), "."), port: u.Port()}
	for _, label := range p.host {
		if _, err := path.Match(label, ""); err != nil {
			return registryPattern{}, fmt.Errorf("registry key %q has a malformed wildcard", key)
		}
		p.glob = p.glob || strings.ContainsAny(label, "*?[")
	}
	if repo := strings.Trim(u.Path, "/"); repo != "" && repo != "v1" && repo != "v2" {
		p.path = strings.Split(repo, "/")
	}
	return p, nil
}

// matches reports whether the pattern applies to a repository (such as team/app; empty
// for the registry itself) of a registry (host or host:port).
func (p registryPattern) matches(registry, repo string) bool {
	u, err := url.Parse("//" + registry)
	if err != nil || u.Port() != p.port {
		return false
	}
	host := strings.Split(canonicalHost(u.Hostname()), ".")
	if len(host) != len(p.host) {
		return false
	}
	for i, label := range p.host {
		if ok, _ := path.Match(label, host[i]); !ok {
			return false
		}
	}
	segments := strings.Split(repo, "/")
	if len(p.path) > len(segments) {
		return false
	}
	for i, s := range p.path {
		if segments[i] != s {
			return false
		}
	}
	return true
}

// moreSpecific reports whether p should win over q when both match: an exact host before
// a glob, then a longer path before a shorter one.
func (p registryPattern) moreSpecific(q registryPattern) bool {
	if p.glob != q.glob {
		return !p.glob
	}
	return len(p.path) > len(q.path)
}

// canonicalHost lower-cases a host name and maps the Docker Hub aliases to one name.
func canonicalHost(host string) string {
	host = strings.ToLower(host)
	switch host {
	case "docker.io", "registry-1.docker.io":
		return dockerHub
	}
	return host
}
