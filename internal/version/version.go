// Package version holds the build's version, stamped by the Makefile with
// -ldflags "-X github.com/stagehand-dev/stagehand/internal/version.Version=...".
package version

import (
	"fmt"
	"runtime"
)

// Version is the release or `git describe` of the build; "dev" when not stamped.
var Version = "dev"

// String describes the build of the named binary in one line.
func String(binary string) string {
	return fmt.Sprintf("%s %s (%s, %s/%s)", binary, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
