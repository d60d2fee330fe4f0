package localcluster

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// EvictionRequestGroupVersion is the API of KEP-4563's EvictionRequests and Evictions,
// alpha from Kubernetes 1.37 (docs/evictions.md).
const EvictionRequestGroupVersion = "lifecycle.k8s.io/v1alpha1"

// alphaAPIArgs are the apiserver flags that turn on the alpha APIs Stagehand builds on,
// for an apiserver of the given minor version: from 1.37 the EvictionRequestAPI feature
// gate and its API group. Older apiservers do not know the gate and would refuse it.
func alphaAPIArgs(minor int) []string {
	if minor < 37 {
		return nil
	}
	return []string{"--feature-gates=EvictionRequestAPI=true", "--runtime-config=" + EvictionRequestGroupVersion + "=true"}
}

var versionLine = regexp.MustCompile(`^Kubernetes v1\.(\d+)\.`)

// minorVersion is the minor version of the Kubernetes binary at path, from its --version.
func minorVersion(path string) (int, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("%s --version: %w", path, err)
	}
	return parseMinor(string(out))
}

func parseMinor(version string) (int, error) {
	m := versionLine.FindStringSubmatch(version)
	if m == nil {
		return 0, fmt.Errorf("unexpected version %q", version)
	}
	return strconv.Atoi(m[1])
}
