package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KubernetesVersion is the control-plane version that hack/build-controlplane.sh builds.
const KubernetesVersion = "v1.36.3"

// DirEnv names the environment variable that overrides the default cluster folder.
const DirEnv = "STAGEHAND_LOCALCLUSTER_DIR"

// FindRepoRoot walks up from the working directory to the folder that holds go.mod.
func FindRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("finding the repository root: %w", err)
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("finding the repository root: no go.mod above %s", wd)
		}
	}
}

// DefaultBinDir is where hack/build-controlplane.sh puts the control-plane binaries.
func DefaultBinDir(repoRoot string) string {
	return filepath.Join(repoRoot, "bin", "k8s-"+KubernetesVersion)
}

// DefaultDir is the cluster folder used when neither a flag nor $STAGEHAND_LOCALCLUSTER_DIR
// names one.
func DefaultDir(repoRoot string) string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(repoRoot, ".localcluster")
}
