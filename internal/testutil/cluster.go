package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// ControlPlaneMissing returns why the local control plane cannot run ("" when it can):
// the binaries in binDir are missing. Callers skip their tests locally and fail in CI
// (CI=true), where hack/build-controlplane.sh must have run.
func ControlPlaneMissing(binDir string) string {
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		return fmt.Sprintf("control plane not built (%v); run hack/build-controlplane.sh", err)
	}
	return ""
}

// InCI reports whether CI=true.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// InstallCRDs creates every CRD in <repoRoot>/deploy/crds and waits until each one is
// Established (the e2e framework's implementation).
func InstallCRDs(ctx context.Context, client dynamic.Interface, repoRoot string) error {
	return framework.InstallCRDs(ctx, client, repoRoot)
}

// Namespace creates a namespace named after the test and deletes it when the test ends
// (the e2e framework's implementation).
func Namespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	return framework.CreateNamespace(t, client)
}
