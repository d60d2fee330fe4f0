package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// DefaultImageMap sends the Stagehand images to the binaries that `make build` puts in
// <repo>/bin. The format is nodeagent.ParseImageMap's: one "pattern=path" per line.
func DefaultImageMap(repoRoot string) string {
	bin := filepath.Join(repoRoot, "bin")
	return "# image pattern = local binary (see docs/localcluster.md)\n" +
		"stagehand/deployer:*=" + filepath.Join(bin, "stagehand-deployer") + "\n" +
		"stagehand/controller:*=" + filepath.Join(bin, "stagehand-controller") + "\n" +
		"stagehand/testapp:*=" + filepath.Join(bin, "stagehand-testapp") + "\n"
}

// writeImageMap writes <dir>/imagemap from spec, which is image-map text or the path of an
// image-map file. Relative binary paths are made absolute first: against the file's folder
// for a file, against the working directory for text. The map is checked before it is
// written, so a typo fails the start rather than the first pod.
func writeImageMap(l layout, spec string) error {
	text, base := spec, "."
	if fi, err := os.Stat(spec); err == nil && fi.Mode().IsRegular() {
		data, err := os.ReadFile(spec)
		if err != nil {
			return fmt.Errorf("reading the image map: %w", err)
		}
		text, base = string(data), filepath.Dir(spec)
	}
	base, err := filepath.Abs(base)
	if err != nil {
		return fmt.Errorf("resolving the image map's folder: %w", err)
	}
	text = absolutizeImageMap(text, base)
	if _, err := nodeagent.ParseImageMap(text); err != nil {
		return fmt.Errorf("checking the image map: %w", err)
	}
	return writeFileAtomic(l.imageMap(), []byte(text), 0o644)
}

// absolutizeImageMap rewrites relative paths in "pattern=path" lines against base. Lines it
// does not understand are left for ParseImageMap to reject.
func absolutizeImageMap(text, base string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		pattern, path, ok := strings.Cut(trimmed, "=")
		path = strings.TrimSpace(path)
		if !ok || path == "" || filepath.IsAbs(path) {
			continue
		}
		lines[i] = strings.TrimSpace(pattern) + "=" + filepath.Join(base, path)
	}
	return strings.Join(lines, "\n")
}
