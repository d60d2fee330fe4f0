package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The repository root is the folder of the Stagehand module, not the nearest go.mod: the
// local cluster and e2e/ are modules of their own inside it.
func TestFindRepoRootSkipsNestedModules(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write(filepath.Join(root, "go.mod"), "// Stagehand\nmodule github.com/stagehand-dev/stagehand\n\ngo 1.26.0\n")
	write(filepath.Join(root, "e2e", "go.mod"), "module github.com/stagehand-dev/stagehand/e2e\n")
	write(filepath.Join(root, "e2e", "localcluster", "go.mod"), "module github.com/stagehand-dev/stagehand/e2e/localcluster\n")
	work := filepath.Join(root, "e2e", "localcluster", "gate")
	require.NoError(t, os.MkdirAll(work, 0o755))
	t.Chdir(work)

	got, err := FindRepoRoot()
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	gotReal, err := filepath.EvalSymlinks(got)
	require.NoError(t, err)
	assert.Equal(t, want, gotReal)
}

func TestControlPlaneMissing(t *testing.T) {
	bin := t.TempDir()
	assert.Contains(t, ControlPlaneMissing(bin), "make controlplane")
	for _, name := range []string{etcdName, apiserverName, controllerManagerName, schedulerName} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), nil, 0o755))
	}
	assert.Empty(t, ControlPlaneMissing(bin))
}
