package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanMapped(t *testing.T) {
	img := MappedImage{Binary: "/repo/bin/stagehand-deployer", Aliases: []string{"openshift-deploy"}}
	const binDir = "/pod/bin"
	tests := []struct {
		name          string
		command, args []string
		want          []string
		links         bool
	}{
		{name: "no command runs the binary with the args",
			args: []string{"--until=50%"}, want: []string{"/repo/bin/stagehand-deployer", "--until=50%"}},
		{name: "nothing at all", want: []string{"/repo/bin/stagehand-deployer"}},
		{name: "the binary's name is replaced by the binary",
			command: []string{"stagehand-deployer", "--until=pre"}, args: []string{"-v"},
			want: []string{"/repo/bin/stagehand-deployer", "--until=pre", "-v"}, links: true},
		{name: "the binary's path in the image is replaced by the binary",
			command: []string{"/usr/local/bin/stagehand-deployer"},
			want:    []string{"/repo/bin/stagehand-deployer"}, links: true},
		{name: "an alias runs through its link, which keeps the name",
			command: []string{"/usr/local/bin/openshift-deploy", "--until=50%"},
			want:    []string{"/pod/bin/openshift-deploy", "--until=50%"}, links: true},
		{name: "a shell runs on the host with the links on PATH",
			command: []string{"/bin/sh", "-c", "stagehand-deployer --until=50% && echo smoke test && stagehand-deployer"},
			want:    []string{"/bin/sh", "-c", "stagehand-deployer --until=50% && echo smoke test && stagehand-deployer"}, links: true},
		{name: "args follow a host command",
			command: []string{"/bin/sh", "-c"}, args: []string{"openshift-deploy"},
			want: []string{"/bin/sh", "-c", "openshift-deploy"}, links: true},
		{name: "a name that only contains the binary's name is another program",
			command: []string{"stagehand-deployer-wrapper"},
			want:    []string{"stagehand-deployer-wrapper"}, links: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planMapped(img, binDir, tt.command, tt.args)
			assert.Equal(t, tt.want, got.argv)
			assert.Equal(t, tt.links, got.links)
		})
	}
}

func TestPlanMappedDoesNotShareTheCommand(t *testing.T) {
	command := make([]string, 2, 10)
	command[0], command[1] = "/bin/sh", "-c"
	got := planMapped(MappedImage{Binary: "/b"}, "/pod/bin", command, []string{"x"})
	got.argv[0] = "changed"
	assert.Equal(t, "/bin/sh", command[0])
}

func TestLinkMapped(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "stagehand-deployer")
	require.NoError(t, os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755))
	binDir := filepath.Join(dir, "pod", binDirName)
	img := MappedImage{Binary: binary, Aliases: []string{"openshift-deploy"}}

	require.NoError(t, linkMapped(binDir, img))
	// Again, over a stale link and a stray file: both are replaced.
	require.NoError(t, os.Remove(filepath.Join(binDir, "openshift-deploy")))
	require.NoError(t, os.Symlink("/elsewhere", filepath.Join(binDir, "openshift-deploy")))
	require.NoError(t, os.Remove(filepath.Join(binDir, "stagehand-deployer")))
	require.NoError(t, os.WriteFile(filepath.Join(binDir, "stagehand-deployer"), nil, 0o644))
	require.NoError(t, linkMapped(binDir, img))

	for _, name := range []string{"stagehand-deployer", "openshift-deploy"} {
		got, err := os.Readlink(filepath.Join(binDir, name))
		require.NoError(t, err, name)
		assert.Equal(t, binary, got, name)
	}
	entries, err := os.ReadDir(binDir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary link is left")
}

func TestPrependPath(t *testing.T) {
	assert.Equal(t, "/pod/bin", prependPath("/pod/bin", ""))
	assert.Equal(t, "/pod/bin:/usr/bin:/bin", prependPath("/pod/bin", "/usr/bin:/bin"))
}
