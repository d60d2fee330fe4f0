package shellscript

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommands(t *testing.T) {
	got, err := Commands(`CGO_ENABLED=0 go build -ldflags "-s -w -X a.b=${V}" -o '/out/x y' ./cmd/x&&echo a\ b;true | cat $(date)`)
	require.NoError(t, err)
	assert.Equal(t, []Command{
		{Assigns: []Assign{{"CGO_ENABLED", "0"}},
			Args: []string{"go", "build", "-ldflags", "-s -w -X a.b=${V}", "-o", "/out/x y", "./cmd/x"}},
		{Args: []string{"echo", "a b"}},
		{Args: []string{"true"}},
		{Args: []string{"cat", "$(date)"}},
	}, got)
}

func TestCommandsRefusesBrokenScripts(t *testing.T) {
	_, err := Commands(`echo "unterminated`)
	assert.Error(t, err)
}
