package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// DefaultImageMap sends the Stagehand images to the binaries that `make build` puts in
// <repo>/bin. The format is nodeagent.ParseImageMap's: one "pattern=path [alias ...]" per
// line. The aliases are the binaries' other names in their images: the deployer answers to
// openshift-deploy, so that OpenShift custom scripts run unchanged.
func DefaultImageMap(repoRoot string) string {
	bin := filepath.Join(repoRoot, "bin")
	lines := []nodeagent.ImageMapLine{
		{Pattern: "stagehand/deployer:*", Image: nodeagent.MappedImage{
			Binary: filepath.Join(bin, "stagehand-deployer"), Aliases: []string{"openshift-deploy"}}},
		{Pattern: "stagehand/controller:*", Image: nodeagent.MappedImage{Binary: filepath.Join(bin, "stagehand-controller")}},
		// The kind image (e2e/testapp/Dockerfile) names it /usr/local/bin/testapp.
		{Pattern: "stagehand/testapp:*", Image: nodeagent.MappedImage{
			Binary: filepath.Join(bin, "stagehand-testapp"), Aliases: []string{"testapp"}}},
		{Pattern: "stagehand/example-strategy:*", Image: nodeagent.MappedImage{Binary: filepath.Join(bin, "stagehand-example-strategy")}},
	}
	var b strings.Builder
	b.WriteString("# image pattern = local binary [alias ...] (see docs/localcluster.md)\n")
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
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

// absolutizeImageMap rewrites relative paths in "pattern=path [alias ...]" lines against
// base. Lines it does not understand are left for ParseImageMap to reject.
func absolutizeImageMap(text, base string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		l, err := nodeagent.ParseImageMapLine(trimmed)
		if err != nil || filepath.IsAbs(l.Image.Binary) {
			continue
		}
		l.Image.Binary = filepath.Join(base, l.Image.Binary)
		lines[i] = l.String()
	}
	return strings.Join(lines, "\n")
}
