package images

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ParseTag parses a tag reference such as reg:5000/team/app:stable. A reference without a
// tag means :latest, and one without a registry means Docker Hub. A digest reference
// (repo@sha256:…) is refused: a digest never moves, so there is nothing to watch.
// References to a loopback registry (localhost, 127.0.0.1, [::1]) use plain HTTP.
func ParseTag(ref string) (name.Tag, error) {
	return parseTag(ref, nil)
}

// parseTag is ParseTag that also allows plain HTTP for the registries insecure accepts.
func parseTag(ref string, insecure func(registry string) bool) (name.Tag, error) {
	if strings.Contains(ref, "@") {
		return name.Tag{}, fmt.Errorf("%q is a digest reference, not a tag: a digest never moves, so watch a tag (repo:tag) instead", ref)
	}
	tag, err := name.NewTag(ref, name.WeakValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("%q is not a valid tag reference: %w", ref, err)
	}
	reg := tag.RegistryStr()
	if isLoopback(reg) || (insecure != nil && insecure(reg)) {
		tag, err = name.NewTag(ref, name.WeakValidation, name.Insecure)
		if err != nil {
			return name.Tag{}, fmt.Errorf("%q is not a valid tag reference: %w", ref, err)
		}
	}
	return tag, nil
}

// Pin returns the digest reference of a tag reference: its repository, "@", and digest.
// The repository keeps the spelling of ref ("app:1" pins to "app@sha256:…", not to the
// canonical "index.docker.io/library/app@sha256:…").
func Pin(ref, digest string) (string, error) {
	if _, err := ParseTag(ref); err != nil {
		return "", err
	}
	// The tag, when ref names one, follows the last colon of the last path component (a
	// registry port comes before the first slash).
	repo := ref
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		repo = ref[:len(ref)-len(last)+i]
	}
	pinned := repo + "@" + digest
	if _, err := name.NewDigest(pinned, name.WeakValidation); err != nil {
		return "", fmt.Errorf("pinning %q to %q: %w", ref, digest, err)
	}
	return pinned, nil
}

// isLoopback reports whether a registry (host or host:port) is on the loopback interface,
// where plain HTTP cannot be intercepted on the way.
func isLoopback(registry string) bool {
	u, err := url.Parse("//" + registry)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}
