package nodeagent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ImageMap sends container images to local binaries. It is built by ParseImageMap or
// LoadImageMap; the zero value maps nothing.
type ImageMap struct {
	exact    map[string]MappedImage
	prefixes []imagePrefix // longest prefix first
}

// MappedImage is what an image is mapped to: a local binary, and the other names the
// binary has in the image (a symlink such as /usr/local/bin/openshift-deploy to
// /usr/local/bin/stagehand-deployer), which a container's command may use.
type MappedImage struct {
	// Binary is the path of the local binary.
	Binary string
	// Aliases are file names (no '/') the binary also answers to.
	Aliases []string
}

type imagePrefix struct {
	prefix string
	image  MappedImage
}

// ImageMapLine is one "pattern=path [alias ...]" line of an image map.
type ImageMapLine struct {
	Pattern string
	Image   MappedImage
}

// ParseImageMapLine parses one line: "pattern=path", optionally followed by aliases
// separated by spaces. A path that contains spaces is written in double quotes, Go
// style ("pattern=\"/my dir/bin/app\" alias"). The line must not be blank or a comment.
func ParseImageMapLine(line string) (ImageMapLine, error) {
	pattern, rest, ok := strings.Cut(strings.TrimSpace(line), "=")
	pattern, rest = strings.TrimSpace(pattern), strings.TrimSpace(rest)
	if !ok || pattern == "" || rest == "" {
		return ImageMapLine{}, fmt.Errorf("want pattern=path [alias ...], got %q", line)
	}
	if i := strings.Index(pattern, "*"); i >= 0 && i != len(pattern)-1 {
		return ImageMapLine{}, fmt.Errorf("'*' is only allowed at the end of %q", pattern)
	}
	var path string
	if strings.HasPrefix(rest, `"`) {
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return ImageMapLine{}, fmt.Errorf("unterminated or invalid quoted path in %q: %w", line, err)
		}
		path, _ = strconv.Unquote(quoted) // QuotedPrefix checked it
		rest = rest[len(quoted):]
		if rest != "" && !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "\t") {
			return ImageMapLine{}, fmt.Errorf("want a space after the quoted path in %q", line)
		}
	} else {
		fields := strings.Fields(rest) // rest is trimmed and not empty
		path, rest = fields[0], strings.Join(fields[1:], " ")
	}
	if path == "" {
		return ImageMapLine{}, fmt.Errorf("empty path in %q", line)
	}
	aliases := strings.Fields(rest)
	for _, a := range aliases {
		if strings.ContainsRune(a, '/') || a == "." || a == ".." {
			return ImageMapLine{}, fmt.Errorf("alias %q is not a file name: an alias has no '/'", a)
		}
	}
	if len(aliases) == 0 {
		aliases = nil
	}
	return ImageMapLine{Pattern: pattern, Image: MappedImage{Binary: path, Aliases: aliases}}, nil
}

// String formats the line as ParseImageMapLine reads it, quoting a path with spaces.
func (l ImageMapLine) String() string {
	path := l.Image.Binary
	if strings.ContainsAny(path, " \t\"") {
		path = strconv.Quote(path)
	}
	return strings.Join(append([]string{l.Pattern + "=" + path}, l.Image.Aliases...), " ")
}

// ParseImageMap reads an image map: one "pattern=path [alias ...]" per line (see
// ParseImageMapLine). Blank lines and lines starting with '#' are ignored. A pattern
// matches an image exactly, or, when it ends in '*', every image that starts with the
// rest of the pattern, for example
//
//	stagehand/deployer:*=/abs/bin/stagehand-deployer openshift-deploy
//
// Relative paths are kept as written (LoadImageMap resolves them against the file's folder).
func ParseImageMap(text string) (ImageMap, error) {
	m := ImageMap{exact: map[string]MappedImage{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		l, err := ParseImageMapLine(line)
		if err != nil {
			return ImageMap{}, fmt.Errorf("image map line %d: %w", n, err)
		}
		m.add(l.Pattern, l.Image)
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
	abs := func(img MappedImage) MappedImage {
		if !filepath.IsAbs(img.Binary) {
			img.Binary = filepath.Join(base, img.Binary)
		}
		return img
	}
	for k, v := range m.exact {
		m.exact[k] = abs(v)
	}
	for i := range m.prefixes {
		m.prefixes[i].image = abs(m.prefixes[i].image)
	}
	return m, nil
}

func (m *ImageMap) add(pattern string, image MappedImage) {
	if m.exact == nil {
		m.exact = map[string]MappedImage{}
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		// A later line for the same prefix wins, like it does for exact patterns.
		for i := range m.prefixes {
			if m.prefixes[i].prefix == prefix {
				m.prefixes[i].image = image
				return
			}
		}
		i := 0
		for i < len(m.prefixes) && len(m.prefixes[i].prefix) >= len(prefix) {
			i++
		}
		m.prefixes = append(m.prefixes, imagePrefix{})
		copy(m.prefixes[i+1:], m.prefixes[i:])
		m.prefixes[i] = imagePrefix{prefix: prefix, image: image}
		return
	}
	m.exact[pattern] = image
}

// Resolve returns the local binary (and its aliases) for image. An exact pattern wins over
// a '*' pattern, and a longer '*' pattern wins over a shorter one. An image without a tag
// or digest is also tried as "<image>:latest", so "stagehand/testapp" matches
// "stagehand/testapp:*". Registries are not normalised: "docker.io/stagehand/testapp:v1"
// needs its own pattern.
//
// How a container of a mapped image is started (planMapped):
//
//   - No command: the mapped binary runs with the container's args; the image's
//     entrypoint is the binary.
//   - A command whose first word has the base name of the binary or of one of its
//     aliases ("stagehand-deployer", "/usr/local/bin/openshift-deploy"): that word is
//     replaced by the binary (by its alias link for an alias, so that the binary sees the
//     name it was called by), followed by command[1:] and args.
//   - Any other command (["/bin/sh", "-c", "stagehand-deployer --until=50% && ..."]):
//     command+args run as a host command, with <poddir>/bin first in PATH. That folder
//     holds links to the binary under its base name and under every alias, so a shell
//     finds them as it would in the image's /usr/local/bin.
func (m ImageMap) Resolve(image string) (MappedImage, bool) {
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
				return p.image, true
			}
		}
	}
	return MappedImage{}, false
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
