package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KubernetesVersion is the control-plane version that hack/build-controlplane.sh builds.
const KubernetesVersion = "v1.37.2"

// KubernetesVersionEnv names the environment variable that runs the cluster on another
// control-plane version built into bin/k8s-<version>/: make test-oldest sets it to the
// oldest supported one, which KUBE_OLDEST=1 hack/build-controlplane.sh builds.
const KubernetesVersionEnv = "STAGEHAND_KUBERNETES_VERSION"

// DirEnv names the environment variable that overrides the default cluster folder.
const DirEnv = "STAGEHAND_LOCALCLUSTER_DIR"

// repoModule is the Go module at the repository root. The local cluster has a go.mod of
// its own, and so has e2e/, so the root is found by its module line, not by any go.mod.
const repoModule = "github.com/stagehand-dev/stagehand"

// FindRepoRoot walks up from the working directory to the folder whose go.mod declares the
// Stagehand module: the repository root, which holds bin/, deploy/ and .localcluster/.
func FindRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("finding the repository root: %w", err)
		}
		if err == nil && declaresModule(data, repoModule) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("finding the repository root: no go.mod of %s above %s", repoModule, wd)
		}
	}
}

// declaresModule reports whether the go.mod content declares module path.
func declaresModule(gomod []byte, path string) bool {
	for line := range strings.Lines(string(gomod)) {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == path
		}
	}
	return false
}

// ControlPlaneMissing returns why the local control plane cannot start from binDir (""
// when it can): one of its binaries is not there. Tests hand the reason to gate.Require.
func ControlPlaneMissing(binDir string) string {
	for _, name := range []string{etcdName, apiserverName, controllerManagerName, schedulerName} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return fmt.Sprintf("control plane not built (%v); run `make controlplane` (hack/build-controlplane.sh)", err)
		}
	}
	return ""
}

// DefaultBinDir is where hack/build-controlplane.sh puts the control-plane binaries: those
// of KubernetesVersion, or of the version $STAGEHAND_KUBERNETES_VERSION names.
func DefaultBinDir(repoRoot string) string {
	version := KubernetesVersion
	if v := os.Getenv(KubernetesVersionEnv); v != "" {
		version = "v" + strings.TrimPrefix(v, "v")
	}
	return filepath.Join(repoRoot, "bin", "k8s-"+version)
}

// DefaultDir is the cluster folder used when neither a flag nor $STAGEHAND_LOCALCLUSTER_DIR
// names one.
func DefaultDir(repoRoot string) string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(repoRoot, ".localcluster")
}
