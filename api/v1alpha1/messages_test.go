package v1alpha1

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncateMessage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "fits", in: "hook failed", max: 20, want: "hook failed"},
		{name: "exactly fits", in: "abcdef", max: 6, want: "abcdef"},
		{name: "keeps the end of a log", in: "line 1\nline 2\nerror: boom", max: 14, want: "...error: boom"},
		{name: "never splits a character", in: "aaaa€€", max: 8, want: "...€"},
		{name: "tiny max", in: "abcdef", max: 2, want: ".."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TruncateMessage(tt.in, tt.max)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.max)
			assert.True(t, utf8.ValidString(got))
		})
	}
	long := strings.Repeat("x", 5000) + "the cause"
	assert.True(t, strings.HasSuffix(TruncateMessage(long, MaxStatusMessage), "the cause"))
}
