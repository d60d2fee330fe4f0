package podstatus

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		cut  func(string, int) string
		in   string
		max  int
		want string
	}{
		{name: "end: fits", cut: TruncateEnd, in: "hook failed", max: 20, want: "hook failed"},
		{name: "end: exactly fits", cut: TruncateEnd, in: "abcdef", max: 6, want: "abcdef"},
		{name: "end: keeps the end of a log", cut: TruncateEnd, in: "line 1\nline 2\nerror: boom", max: 14, want: "...error: boom"},
		{name: "end: never splits a character", cut: TruncateEnd, in: "aaaa€€", max: 8, want: "...€"},
		{name: "end: tiny max", cut: TruncateEnd, in: "abcdef", max: 2, want: ".."},
		{name: "start: fits", cut: TruncateStart, in: "hook failed", max: 20, want: "hook failed"},
		{name: "start: exactly fits", cut: TruncateStart, in: "abcdef", max: 6, want: "abcdef"},
		{name: "start: keeps the start", cut: TruncateStart, in: "error: boom\nmore", max: 14, want: "error: boom..."},
		{name: "start: never splits a character", cut: TruncateStart, in: "€€€aaaa", max: 8, want: "€..."},
		{name: "start: tiny max", cut: TruncateStart, in: "abcdef", max: 2, want: ".."},
		{name: "start: zero", cut: TruncateStart, in: "abcdef", max: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cut(tt.in, tt.max)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.max)
			assert.True(t, utf8.ValidString(got))
		})
	}
	long := strings.Repeat("x", 5000) + "the cause"
	assert.True(t, strings.HasSuffix(TruncateEnd(long, 1024), "the cause"))
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
