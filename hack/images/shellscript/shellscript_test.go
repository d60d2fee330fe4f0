package shellscript

import (
	"fmt"
	"sync"
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

// The Dockerfiles check parses several Dockerfiles at once: each parse must keep its own
// words (a shared expand.Config once mixed them, and make verify failed now and then).
func TestCommandsAtOnceKeepTheirOwnWords(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				out := fmt.Sprintf("/out/bin-%d-%d", g, i)
				got, err := Commands(fmt.Sprintf(`CGO_ENABLED=0 go build -ldflags "-s -w" -o %s ./cmd/x%d`, out, g))
				if !assert.NoError(t, err) || !assert.Len(t, got, 1) {
					return
				}
				if !assert.Equal(t, []string{"go", "build", "-ldflags", "-s -w", "-o", out, fmt.Sprintf("./cmd/x%d", g)}, got[0].Args) {
					return
				}
			}
		})
	}
	wg.Wait()
}
