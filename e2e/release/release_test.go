//go:build e2e

// Package release checks what make release makes (hack/release.sh): the archives, their
// sha256 sums and the krew manifest, which must pass krew's own validation and install
// with krew from a local archive, with no index and no network.
package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// The release of this machine's platform: one archive with the three binaries, its sum,
// and a manifest that krew validates and installs from the archive; the installed
// kubectl-stagehand runs.
func TestReleaseArchiveAndKrewManifestInstall(t *testing.T) {
	root, err := localcluster.FindRepoRoot()
	require.NoError(t, err)
	krew := filepath.Join(root, "bin", "tools", "krew")
	validate := filepath.Join(root, "bin", "tools", "validate-krew-manifest")
	for _, tool := range []string{krew, validate} {
		if _, err := os.Stat(tool); err != nil {
			gate.Require(t, "no "+tool+": run make tools")
		}
	}
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	manifest := filepath.Join(dir, "plugins", "stagehand.yaml")
	platform := runtime.GOOS + "/" + runtime.GOARCH

	// Given make release for this platform
	run(t, root, []string{"PLATFORMS=" + platform, "DIST=" + dist, "MANIFEST=" + manifest, "VERSION=v0.1.0"},
		filepath.Join(root, "hack", "release.sh"))

	// Then the archive holds the three binaries, and its sum is right
	archive := filepath.Join(dist, "stagehand_v0.1.0_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	listing := run(t, dir, nil, "tar", "-tzf", archive)
	for _, bin := range []string{"kubectl-stagehand", "stagehand-controller", "stagehand-deployer"} {
		assert.Contains(t, listing, "./"+bin+"\n")
	}
	data, err := os.ReadFile(archive)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(dist, "sha256sums.txt"))
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(sum[:])+"  "+filepath.Base(archive)+"\n", string(sums))
	text, err := os.ReadFile(manifest)
	require.NoError(t, err)
	assert.Contains(t, string(text), "sha256: "+hex.EncodeToString(sum[:]))

	// And krew's own validation passes (its install step downloads; krew install below
	// does that part from the archive)
	run(t, dir, nil, validate, "-skip-install", "-manifest", manifest)

	// And krew installs it from the local archive, with no index
	krewRoot := filepath.Join(dir, "krew")
	env := []string{"KREW_ROOT=" + krewRoot, "HOME=" + dir}
	out := run(t, dir, env, krew, "install", "--manifest="+manifest, "--archive="+archive)
	assert.Contains(t, out, "Installed plugin: stagehand")
	help := run(t, dir, nil, filepath.Join(krewRoot, "bin", "kubectl-stagehand"), "--help")
	assert.Contains(t, help, "rollout")
}

// The validation fails a manifest that krew would refuse (here: a platform with no
// sha256), so the check above can fail.
func TestReleaseKrewValidationRefusesABrokenManifest(t *testing.T) {
	root, err := localcluster.FindRepoRoot()
	require.NoError(t, err)
	validate := filepath.Join(root, "bin", "tools", "validate-krew-manifest")
	if _, err := os.Stat(validate); err != nil {
		gate.Require(t, "no "+validate+": run make tools")
	}
	dir := t.TempDir()
	broken := `apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata: {name: stagehand}
spec:
  version: v0.1.0
  shortDescription: x
  platforms:
    - selector: {matchLabels: {os: linux}}
      uri: https://example.com/a.tar.gz
      bin: kubectl-stagehand
`
	path := filepath.Join(dir, "stagehand.yaml")
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	out, err := exec.Command(validate, "-skip-install", "-manifest", path).CombinedOutput()
	require.Error(t, err, "validate-krew-manifest accepted a platform with no sha256:\n%s", out)
	assert.Contains(t, strings.ToLower(string(out)), "sha256")
}

// run runs name with args in dir, with env added to the environment, and returns its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s\n%s", name, strings.Join(args, " "), out)
	return string(out)
}
