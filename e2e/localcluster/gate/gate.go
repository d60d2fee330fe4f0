// Package gate decides, in one place, what a test does when something it needs is missing
// from the machine: the local control plane's binaries (hack/build-controlplane.sh) or
// docker-registry (hack/install-registry.sh). Locally the test skips and says why. In CI
// (CI=true), where `make test` builds and installs both first, it fails instead, so that a
// broken setup never passes as a run of skips.
//
// The reasons come from localcluster.ControlPlaneMissing and localcluster.RegistryMissing.
// The package is separate so that the stagehand-localcluster command does not link testing.
package gate

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Check decides for a prerequisite that is missing for reason ("" when it is present).
// skip reports whether the tests that need it skip; err is set instead in CI. A TestMain
// that starts a cluster calls it, starts nothing when skip is true, and lets each test
// call Require with the same reason.
func Check(reason string) (skip bool, err error) {
	if reason == "" {
		return false, nil
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		return false, fmt.Errorf("%s (CI=true: `make test` must build and install it first)", reason)
	}
	return true, nil
}

// Require is Check for one test: it skips tb with the reason, or fails it in CI. It does
// nothing when reason is "".
func Require(tb testing.TB, reason string) {
	tb.Helper()
	skip, err := Check(reason)
	switch {
	case err != nil:
		tb.Fatal(err)
	case skip:
		tb.Skip(reason)
	}
}
