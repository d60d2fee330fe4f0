package nodeagent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ImageMap sends container images to local binaries. It is built by ParseImageMap or
// LoadImageMap; the zero value maps nothing.
type ImageMap struct {
	exact    map[string]string
	prefixes []imagePrefix // longest prefix first
}

type imagePrefix struct {
	prefix, binary string
}

// ParseImageMap reads an image map: one "pattern=path" per line. Blank lines and lines
// starting with '#' are ignored. A pattern matches an image exactly, or, when it ends in
// '*', every image that starts with the rest of the pattern, for example
//
//	stagehand/deployer:*=/abs/bin/stagehand-deployer
//
// Relative paths are kept as written (LoadImageMap resolves them against the file's folder).
func ParseImageMap(text string) (ImageMap, error) {
	m := ImageMap{exact: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pattern, path, ok := strings.Cut(line, "=")
		pattern, path = strings.TrimSpace(pattern), strings.TrimSpace(path)
		if !ok || pattern == "" || path == "" {
			return ImageMap{}, fmt.Errorf("image map line %d: want pattern=path, got %q", n, line)
		}
		if i := strings.Index(pattern, "*"); i >= 0 && i != len(pattern)-1 {
			return ImageMap{}, fmt.Errorf("image map line %d: '*' is only allowed at the end of %q", n, pattern)
		}
		m.add(pattern, path)
	}
	if err := sc.Err(); err != nil {
		return ImageMap{}, fmt.Errorf("reading image map: %w", err)
	}
	return m, nil
}

// LoadImageMap reads an image map file (see ParseImageMap). Relative binary paths are
// resolved against the folder of the file.
func LoadImageMap(path string) (ImageMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ImageMap{}, fmt.Errorf("loading image map: %w", err)
	}
	m, err := ParseImageMap(string(data))
	if err != nil {
		return ImageMap{}, fmt.Errorf("%s: %w", path, err)
	}
	base := filepath.Dir(path)
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	for k, v := range m.exact {
		m.exact[k] = abs(v)
	}
	for i := range m.prefixes {
		m.prefixes[i].binary = abs(m.prefixes[i].binary)
	}
	return m, nil
}

func (m *ImageMap) add(pattern, binary string) {
	if m.exact == nil {
		m.exact = map[string]string{}
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		// A later line for the same prefix wins, like it does for exact patterns.
		for i := range m.prefixes {
			if m.prefixes[i].prefix == prefix {
				m.prefixes[i].binary = binary
				return
			}
		}
		i := 0
		for i < len(m.prefixes) && len(m.prefixes[i].prefix) >= len(prefix) {
			i++
		}
		m.prefixes = append(m.prefixes, imagePrefix{})
		copy(m.prefixes[i+1:], m.prefixes[i:])
		m.prefixes[i] = imagePrefix{prefix: prefix, binary: binary}
		return
	}
	m.exact[pattern] = binary
}

// Resolve returns the local binary for image. An exact pattern wins over a '*' pattern, and
// a longer '*' pattern wins over a shorter one. An image without a tag or digest is also
// tried as "<image>:latest", so "stagehand/testapp" matches "stagehand/testapp:*".
// Registries are not normalised: "docker.io/stagehand/testapp:v1" needs its own pattern.
//
// How a mapped container is started: argv[0] is the mapped binary, and the arguments are
// the container's args when its command is empty, or else command[1:] followed by args.
// In other words the container's command[0] (the image's entrypoint) is replaced by the
// binary.
func (m ImageMap) Resolve(image string) (binary string, ok bool) {
	candidates := []string{image}
	if !hasTagOrDigest(image) {
		candidates = append(candidates, image+":latest")
	}
	for _, c := range candidates {
		if b, ok := m.exact[c]; ok {
			return b, true
		}
	}
	for _, p := range m.prefixes {
		for _, c := range candidates {
			if strings.HasPrefix(c, p.prefix) {
				return p.binary, true
			}
		}
	}
	return "", false
}

// Len is the number of patterns in the map.
func (m ImageMap) Len() int { return len(m.exact) + len(m.prefixes) }

// hasTagOrDigest reports whether an image reference names a tag or a digest. A ':' before
// the last '/' belongs to a registry host:port.
func hasTagOrDigest(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	last := image[strings.LastIndex(image, "/")+1:]
	return strings.Contains(last, ":")
}

// mappedArgv builds the argv of a container whose image is mapped to binary (see Resolve).
func mappedArgv(binary string, command, args []string) []string {
	argv := []string{binary}
	if len(command) > 0 {
		argv = append(argv, command[1:]...)
	}
	return append(argv, args...)
}
