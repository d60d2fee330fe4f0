package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hook event names its revision's hook: the previous revision's last hook event, from
// the same second, is not this revision's.
func TestNamesHookOf(t *testing.T) {
	assert.True(t, namesHookOf("post hook web-2-hook-post started", "web-2"))
	assert.True(t, namesHookOf("pre hook web-2-hook-pre-3 (attempt 3 of 3) failed (exit 1): x", "web-2"))
	assert.False(t, namesHookOf("post hook web-1-hook-post succeeded", "web-2"))
	assert.False(t, namesHookOf("post hook web-12-hook-post succeeded", "web-1"), "web-1 is a prefix of web-12")
}
