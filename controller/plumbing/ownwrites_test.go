package plumbing

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOwnWrites(t *testing.T) {
	var w OwnWrites
	assert.False(t, w.Stale("ns/a", "1"), "nothing written yet")
	w.Wrote("ns/a", "1", "2")
	assert.True(t, w.Stale("ns/a", "1"), "the cache still holds the version the write replaced")
	assert.False(t, w.Stale("ns/a", "2"), "the cache moved on")
	assert.False(t, w.Stale("ns/b", "1"), "another key")
	w.Wrote("ns/c", "", "")
	assert.False(t, w.Stale("ns/c", ""), "an object without a version is never stale")
	w.Wrote("ns/d", "5", "6")
	w.Wrote("ns/d", "6", "6")
	assert.False(t, w.Stale("ns/d", "6"), "a write that changed nothing sends no event: nothing to wait for")
	assert.False(t, w.Stale("ns/d", "5"), "and it forgets the earlier write")
	w.Forget("ns/a")
	assert.False(t, w.Stale("ns/a", "1"))
}
