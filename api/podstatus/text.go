package podstatus

import (
	"strings"
	"unicode/utf8"
)

// ellipsis marks where TruncateStart and TruncateEnd cut.
const ellipsis = "..."

// LastLine is the last line of a container's output, trailing newlines ignored.
func LastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// TruncateStart returns s when it fits in max bytes. Otherwise it keeps the start of s,
// ending in "...": for a message whose first words say the most. It never splits a UTF-8
// character.
func TruncateStart(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= len(ellipsis) {
		return ellipsis[:max]
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// TruncateEnd returns s when it fits in max bytes. Otherwise it keeps the end of s, after
// "...": the last lines of a log say the most. It never splits a UTF-8 character.
func TruncateEnd(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= len(ellipsis) {
		return ellipsis[:max]
	}
	return ellipsis + Tail(s, max-len(ellipsis))
}

// Tail is at most the last max bytes of s, with no mark where it was cut, and never
// beginning inside a UTF-8 character: for an output tail stored as it was printed.
func Tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}
