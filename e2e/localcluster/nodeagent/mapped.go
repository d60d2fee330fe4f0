package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// binDirName is the per-pod folder of links to mapped binaries, <poddir>/bin. It plays
// the image's /usr/local/bin for commands that a mapped image runs through a shell.
const binDirName = "bin"

// mappedLaunch is how a container of a mapped image starts (see ImageMap.Resolve).
type mappedLaunch struct {
	argv []string
	// links: the container needs the bin folder with links to the binary, first in PATH.
	links bool
}

// planMapped decides the argv of a container whose image is mapped to img, given its
// (expanded) command and args; binDir is the pod's bin folder.
func planMapped(img MappedImage, binDir string, command, args []string) mappedLaunch {
	if len(command) == 0 {
		return mappedLaunch{argv: append([]string{img.Binary}, args...)}
	}
	rest := append(slices.Clone(command[1:]), args...)
	name := filepath.Base(command[0])
	switch {
	case name == filepath.Base(img.Binary):
		return mappedLaunch{argv: append([]string{img.Binary}, rest...), links: true}
	case slices.Contains(img.Aliases, name):
		return mappedLaunch{argv: append([]string{filepath.Join(binDir, name)}, rest...), links: true}
	}
	return mappedLaunch{argv: append(slices.Clone(command), args...), links: true}
}

// linkMapped makes binDir hold a symlink to img's binary under the binary's base name and
// under each alias. It is safe to call again, also from two containers at once: a link
// is replaced atomically, and one that already points at the binary is kept.
func linkMapped(binDir string, img MappedImage) error {
	target, err := filepath.Abs(img.Binary)
	if err != nil {
		return fmt.Errorf("resolving the mapped binary %s: %w", img.Binary, err)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("creating the pod's bin folder: %w", err)
	}
	for _, name := range append([]string{filepath.Base(target)}, img.Aliases...) {
		link := filepath.Join(binDir, name)
		if got, err := os.Readlink(link); err == nil && got == target {
			continue // anything else there is replaced below
		}
		tmp := filepath.Join(binDir, "."+name+"."+newID()[:12])
		if err := os.Symlink(target, tmp); err != nil {
			return fmt.Errorf("linking %s to %s: %w", name, target, err)
		}
		if err := os.Rename(tmp, link); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("linking %s to %s: %w", name, target, err)
		}
	}
	return nil
}

// prependPath returns dir followed by the folders of path (a PATH value).
func prependPath(dir, path string) string {
	if path == "" {
		return dir
	}
	return dir + string(filepath.ListSeparator) + path
}
