package plumbing

import (
	"context"
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

func TestDispatchKindKeyHandsEachKindToItsSync(t *testing.T) {
	var got []string
	syncs := map[string]KindSync{"pod": func(_ context.Context, ns, name string) error {
		got = append(got, ns+"/"+name)
		return nil
	}}
	require.NoError(t, DispatchKindKey(context.Background(), KindKey("pod", "shop", "web-1"), syncs))
	assert.Equal(t, []string{"shop/web-1"}, got)
	assert.True(t, IsFatal(DispatchKindKey(context.Background(), KindKey("rs", "shop", "web-1"), syncs)), "a kind without a sync")
	assert.True(t, IsFatal(DispatchKindKey(context.Background(), "pod", syncs)), "a malformed key")
}
