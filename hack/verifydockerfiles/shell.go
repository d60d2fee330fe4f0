package main

import (
	"fmt"
	"strings"
)

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	if !ok || k == "" {
		return false
	}
	for i, r := range k {
		letter := r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'
		digit := i > 0 && r >= '0' && r <= '9'
		if !letter && !digit {
			return false
		}
	}
	return true
}

// shellWords splits a shell command line into words and the operators && || ; | as
// their own words. It knows quotes and backslashes, which is all the go build commands
// of a Dockerfile need.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, fmt.Errorf(`unterminated " in %q`, s)
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == ';' || c == '&' || c == '|':
			flush()
			op := string(c)
			if i+1 < len(s) && s[i+1] == c && c != ';' {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

func splitCommands(words []string) [][]string {
	var cmds [][]string
	var cur []string
	for _, w := range words {
		switch w {
		case "&&", "||", ";", "|", "&":
			cmds = append(cmds, cur)
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	return append(cmds, cur)
}

func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
