package plumbing

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOwnWrites(t *testing.T) {
	var w OwnWrites
	assert.False(t, w.Stale("ns/a", "1"), "nothing written yet")
	w.Wrote("ns/a", "1")
	assert.True(t, w.Stale("ns/a", "1"), "the cache still holds the version the write replaced")
	assert.False(t, w.Stale("ns/a", "2"), "the cache moved on")
	assert.False(t, w.Stale("ns/b", "1"), "another key")
	w.Wrote("ns/c", "")
	assert.False(t, w.Stale("ns/c", ""), "an object without a version is never stale")
	w.Forget("ns/a")
	assert.False(t, w.Stale("ns/a", "1"))
}
