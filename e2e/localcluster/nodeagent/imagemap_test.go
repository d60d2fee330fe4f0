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
		{name: "alias with a slash", text: "stagehand/deployer:*=/bin/d bin/openshift-deploy"},
		{name: "alias dot-dot", text: "stagehand/deployer:*=/bin/d .."},
		{name: "unterminated quote", text: `a:*="/my dir/a alias`},
		{name: "empty quoted path", text: `a:*="" alias`},
		{name: "no space after the quoted path", text: `a:*="/my dir/a"alias`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseImageMap("# comment\n" + tt.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "line 2")
		})
	}
}

func TestParseImageMapLine(t *testing.T) {
	tests := []struct {
		name, line string
		want       ImageMapLine
		// format is what String gives back; "" means the line itself.
		format string
	}{
		{name: "old syntax", line: "stagehand/testapp:*=/bin/testapp",
			want: ImageMapLine{Pattern: "stagehand/testapp:*", Image: MappedImage{Binary: "/bin/testapp"}}},
		{name: "spaces around the equals sign", line: " a:* = bin/a ",
			want: ImageMapLine{Pattern: "a:*", Image: MappedImage{Binary: "bin/a"}}, format: "a:*=bin/a"},
		{name: "one alias", line: "stagehand/deployer:*=/bin/stagehand-deployer openshift-deploy",
			want: ImageMapLine{Pattern: "stagehand/deployer:*", Image: MappedImage{Binary: "/bin/stagehand-deployer", Aliases: []string{"openshift-deploy"}}}},
		{name: "aliases separated by several blanks", line: "a=/bin/a  x\ty",
			want: ImageMapLine{Pattern: "a", Image: MappedImage{Binary: "/bin/a", Aliases: []string{"x", "y"}}}, format: "a=/bin/a x y"},
		{name: "quoted path with a space", line: `a:*="/my dir/a" x`,
			want: ImageMapLine{Pattern: "a:*", Image: MappedImage{Binary: "/my dir/a", Aliases: []string{"x"}}}},
		{name: "quoted path alone", line: `a:*="/my dir/a"`,
			want: ImageMapLine{Pattern: "a:*", Image: MappedImage{Binary: "/my dir/a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseImageMapLine(tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			format := tt.format
			if format == "" {
				format = tt.line
			}
			assert.Equal(t, format, got.String())
			again, err := ParseImageMapLine(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String gives a line that parses back the same")
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
stagehand/testapp:*=/bin/testapp2 ta
stagehand/deployer:*=/bin/deployer openshift-deploy od
`)
	require.NoError(t, err)
	assert.Equal(t, 5, m.Len())
	tests := []struct {
		image string
		want  MappedImage
		ok    bool
	}{
		{image: "stagehand/testapp:v1", want: MappedImage{Binary: "/bin/testapp2", Aliases: []string{"ta"}}, ok: true}, // the later line wins
		{image: "stagehand/testapp:special", want: MappedImage{Binary: "/bin/special"}, ok: true},
		{image: "stagehand/testapp", want: MappedImage{Binary: "/bin/testapp2", Aliases: []string{"ta"}}, ok: true}, // as :latest
		{image: "stagehand/deployer:v2", want: MappedImage{Binary: "/bin/deployer", Aliases: []string{"openshift-deploy", "od"}}, ok: true},
		{image: "stagehand/controller:v2", want: MappedImage{Binary: "/bin/any-stagehand"}, ok: true},
		{image: "registry.local:5000/app", want: MappedImage{Binary: "/bin/app"}, ok: true},
		{image: "registry.local:5000/app@sha256:abc", ok: false},
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
	require.NoError(t, os.WriteFile(path, []byte("a:*=bin/a x\nb:1=/abs/b\n"), 0o644))
	m, err := LoadImageMap(path)
	require.NoError(t, err)
	got, _ := m.Resolve("a:v1")
	assert.Equal(t, MappedImage{Binary: filepath.Join(dir, "bin/a"), Aliases: []string{"x"}}, got)
	got, _ = m.Resolve("b:1")
	assert.Equal(t, "/abs/b", got.Binary)

	_, err = LoadImageMap(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

func TestImageID(t *testing.T) {
	assert.Regexp(t, `^stagehand/testapp@sha256:[0-9a-f]{64}$`, imageID("stagehand/testapp:v1"))
	assert.Regexp(t, `^localhost:5000/x@sha256:[0-9a-f]{64}$`, imageID("localhost:5000/x"))
	assert.NotEqual(t, imageID("a:1"), imageID("a:2"))
}
