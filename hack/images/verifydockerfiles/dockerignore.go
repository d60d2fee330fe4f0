package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// ignoreFile is a .dockerignore, read and matched by moby/patternmatcher as BuildKit does:
// patterns are relative to the build context root, a pattern excludes the paths it matches
// and everything under them, "!" lines re-include, and the last matching line wins.
type ignoreFile struct {
	name     string // as shown in messages, relative to the Dockerfiles dir
	matcher  *patternmatcher.PatternMatcher
	patterns []ignorePattern
}

// ignorePattern is one line of the file, kept to name the line that excluded a file.
type ignorePattern struct {
	line    int
	text    string                         // the line as written, trimmed
	matcher *patternmatcher.PatternMatcher // this line alone, without its "!"
}

// readIgnoreFile reads path; a file that does not exist is an empty ignore file.
func readIgnoreFile(path, name string) (*ignoreFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return parseIgnore(nil, name)
	}
	if err != nil {
		return nil, err
	}
	return parseIgnore(data, name)
}

func parseIgnore(data []byte, name string) (*ignoreFile, error) {
	patterns, err := ignorefile.ReadAll(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	f := &ignoreFile{name: name}
	// ignorefile.ReadAll keeps one pattern per line that is neither blank nor a comment;
	// pair them with those lines for the messages.
	lines := patternLines(data)
	if len(lines) != len(patterns) {
		return nil, fmt.Errorf("%s: %d patterns on %d pattern lines", name, len(patterns), len(lines))
	}
	for i, p := range patterns {
		m, err := patternmatcher.New([]string{strings.TrimPrefix(p, "!")})
		if err != nil {
			return nil, fmt.Errorf("%s:%d: bad .dockerignore pattern: %w", name, lines[i].n, err)
		}
		f.patterns = append(f.patterns, ignorePattern{line: lines[i].n, text: lines[i].text, matcher: m})
	}
	if f.matcher, err = patternmatcher.New(patterns); err != nil {
		return nil, fmt.Errorf("%s: bad .dockerignore pattern: %w", name, err)
	}
	return f, nil
}

type patternLine struct {
	n    int
	text string
}

// patternLines returns the lines that ignorefile.ReadAll takes a pattern from: not a
// comment (a "#" first, before trimming) and not blank.
func patternLines(data []byte) []patternLine {
	var out []patternLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		if n == 1 {
			raw = strings.TrimPrefix(raw, "\uFEFF")
		}
		if text := strings.TrimSpace(raw); text != "" && !strings.HasPrefix(raw, "#") {
			out = append(out, patternLine{n, text})
		}
	}
	return out
}

// excluded reports whether the context-relative file path rel is left out of the build
// context, and the line that decided it (nil when no line matched).
func (f *ignoreFile) excluded(rel string) (bool, *ignorePattern) {
	out, err := f.matcher.MatchesOrParentMatches(rel)
	if err != nil {
		return false, nil
	}
	for i := len(f.patterns) - 1; i >= 0; i-- {
		if m, err := f.patterns[i].matcher.MatchesOrParentMatches(rel); err == nil && m {
			return out, &f.patterns[i]
		}
	}
	return out, nil
}
