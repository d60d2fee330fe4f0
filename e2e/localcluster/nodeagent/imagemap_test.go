package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseImageMapErrors(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{name: "no equals", text: "stagehand/testapp:*"},
		{name: "empty path", text: "stagehand/testapp:*="},
		{name: "empty pattern", text: "=/bin/true"},
		{name: "star in the middle", text: "stagehand/*:v1=/bin/true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseImageMap("# comment\n" + tt.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "line 2")
		})
	}
}

func TestImageMapResolve(t *testing.T) {
	m, err := ParseImageMap(`
# test binaries
stagehand/testapp:*=/bin/testapp
stagehand/testapp:special=/bin/special
stagehand/*=/bin/any-stagehand
registry.local:5000/app:*=/bin/app
stagehand/testapp:*=/bin/testapp2
`)
	require.NoError(t, err)
	assert.Equal(t, 4, m.Len())
	tests := []struct {
		image, want string
		ok          bool
	}{
		{image: "stagehand/testapp:v1", want: "/bin/testapp2", ok: true}, // the later line wins
		{image: "stagehand/testapp:special", want: "/bin/special", ok: true},
		{image: "stagehand/testapp", want: "/bin/testapp2", ok: true}, // as :latest
		{image: "stagehand/deployer:v2", want: "/bin/any-stagehand", ok: true},
		{image: "registry.local:5000/app", want: "/bin/app", ok: true},
		{image: "registry.local:5000/app@sha256:abc", want: "", ok: false},
		{image: "nginx:1.27", ok: false},
		{image: "docker.io/stagehand/testapp:v1", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, ok := m.Resolve(tt.image)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestZeroImageMapResolvesNothing(t *testing.T) {
	var m ImageMap
	_, ok := m.Resolve("stagehand/testapp:v1")
	assert.False(t, ok)
}

func TestLoadImageMapResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "images.txt")
	require.NoError(t, os.WriteFile(path, []byte("a:*=bin/a\nb:1=/abs/b\n"), 0o644))
	m, err := LoadImageMap(path)
	require.NoError(t, err)
	got, _ := m.Resolve("a:v1")
	assert.Equal(t, filepath.Join(dir, "bin/a"), got)
	got, _ = m.Resolve("b:1")
	assert.Equal(t, "/abs/b", got)

	_, err = LoadImageMap(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

func TestMappedArgv(t *testing.T) {
	tests := []struct {
		name          string
		command, args []string
		want          []string
	}{
		{name: "nothing", want: []string{"/b"}},
		{name: "args only", args: []string{"exit", "3"}, want: []string{"/b", "exit", "3"}},
		{name: "command replaces its first word", command: []string{"/app", "serve"}, args: []string{"-v"}, want: []string{"/b", "serve", "-v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mappedArgv("/b", tt.command, tt.args))
		})
	}
}

func TestImageID(t *testing.T) {
	assert.Regexp(t, `^stagehand/testapp@sha256:[0-9a-f]{64}$`, imageID("stagehand/testapp:v1"))
	assert.Regexp(t, `^localhost:5000/x@sha256:[0-9a-f]{64}$`, imageID("localhost:5000/x"))
	assert.NotEqual(t, imageID("a:1"), imageID("a:2"))
}
