package localcluster

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

func TestAbsolutizeImageMap(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "relative", in: "a:*=bin/a", want: "a:*=/base/bin/a"},
		{name: "absolute kept", in: "a:*=/x/a", want: "a:*=/x/a"},
		{name: "spaces trimmed", in: " a:* = bin/a ", want: "a:*=/base/bin/a"},
		{name: "comments and blanks kept", in: "# c\n\na=b", want: "# c\n\na=/base/b"},
		{name: "malformed left for the parser", in: "nonsense", want: "nonsense"},
		{name: "aliases kept", in: "a:*=bin/a x y", want: "a:*=/base/bin/a x y"},
		{name: "quoted relative path", in: `a:*="my bin/a" x`, want: `a:*="/base/my bin/a" x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, absolutizeImageMap(tt.in, "/base"))
		})
	}
	// A base with a space is quoted, so that the path stays one word.
	assert.Equal(t, `a:*="/my base/bin/a" x`, absolutizeImageMap("a:*=bin/a x", "/my base"))
}

func TestDefaultImageMap(t *testing.T) {
	for _, root := range []string{"/repo", "/my repo"} {
		t.Run(root, func(t *testing.T) {
			m, err := nodeagent.ParseImageMap(DefaultImageMap(root))
			require.NoError(t, err)
			deployer, ok := m.Resolve("stagehand/deployer:v1")
			require.True(t, ok)
			assert.Equal(t, nodeagent.MappedImage{
				Binary: filepath.Join(root, "bin", "stagehand-deployer"), Aliases: []string{"openshift-deploy"}}, deployer)
			testapp, ok := m.Resolve("stagehand/testapp:e2e")
			require.True(t, ok)
			assert.Equal(t, []string{"testapp"}, testapp.Aliases)
			example, ok := m.Resolve("stagehand/example-strategy:latest")
			require.True(t, ok)
			assert.Equal(t, filepath.Join(root, "bin", "stagehand-example-strategy"), example.Binary)
		})
	}
}
