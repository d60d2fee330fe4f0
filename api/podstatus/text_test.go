package podstatus

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncateEnd(t *testing.T) {
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
			got := TruncateEnd(tt.in, tt.max)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.max)
			assert.True(t, utf8.ValidString(got))
		})
	}
	long := strings.Repeat("x", 5000) + "the cause"
	assert.True(t, strings.HasSuffix(TruncateEnd(long, 1024), "the cause"))
}

func TestTruncateStart(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "fits", in: "hook failed", max: 20, want: "hook failed"},
		{name: "exactly fits", in: "abcdef", max: 6, want: "abcdef"},
		{name: "keeps the start", in: "error: boom\nmore", max: 14, want: "error: boom..."},
		{name: "never splits a character", in: "€€€aaaa", max: 8, want: "€..."},
		{name: "tiny max", in: "abcdef", max: 2, want: ".."},
		{name: "zero", in: "abcdef", max: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TruncateStart(tt.in, tt.max)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.max)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestTail(t *testing.T) {
	assert.Equal(t, "abc", Tail("abc", 5))
	assert.Equal(t, "bc", Tail("abc", 2))
	// "€" is three bytes: the last 4 bytes of "a€€" start inside the first "€".
	got := Tail("a€€", 4)
	assert.Equal(t, "€", got)
	assert.True(t, utf8.ValidString(got))
}

func TestLastLine(t *testing.T) {
	assert.Equal(t, "done", LastLine("step 1\nstep 2\ndone\n\n"))
	assert.Equal(t, "only", LastLine("only"))
	assert.Equal(t, "", LastLine(""))
	assert.Equal(t, "", LastLine("\n\n"))
}
