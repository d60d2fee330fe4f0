package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDownWithNothingRunning(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, Down(filepath.Join(dir, "missing")))

	l := layout{dir: dir}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pids"), 0o755))
	// A pid that exists but started at another time is not ours: Down leaves it alone.
	reused := fmt.Sprintf("%d 1\n", os.Getpid()) // this test's pid, with a start time it never had
	require.NoError(t, os.WriteFile(l.pidFile(apiserverName), []byte(reused), 0o644))
	require.NoError(t, os.WriteFile(l.pidFile(etcdName), []byte("999999999 1\n"), 0o644))
	assert.NoError(t, Down(dir))
	files, _ := filepath.Glob(l.pidFile("*"))
	assert.Empty(t, files, "Down removes stale pid files")
}
