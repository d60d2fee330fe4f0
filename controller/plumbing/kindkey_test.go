package plumbing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindKeyRoundTrips(t *testing.T) {
	kind, ns, name, err := SplitKindKey(KindKey("pod", "shop", "web-1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"pod", "shop", "web-1"}, []string{kind, ns, name})
	_, _, _, err = SplitKindKey("pod/shop")
	assert.True(t, IsFatal(err), "a malformed key is dropped: %v", err)
}
