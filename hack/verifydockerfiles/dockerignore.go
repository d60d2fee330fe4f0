package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// ignoreFile is a parsed .dockerignore. Its semantics follow Docker's (moby/patternmatcher):
// patterns are relative to the build context root; a pattern excludes the paths it matches
// and everything under them; "!" lines re-include; the last matching line wins.
type ignoreFile struct {
	name     string // as shown in messages, relative to the Dockerfiles dir
	patterns []ignorePattern
}

type ignorePattern struct {
	line    int
	text    string // the line as written, trimmed
	include bool   // a "!" line
	segs    []string
}

// readIgnoreFile reads path; a file that does not exist is an empty ignore file.
func readIgnoreFile(path, name string) (*ignoreFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &ignoreFile{name: name}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseIgnore(data, name)
}

// parseIgnore supports the pattern forms this repository uses: plain paths, segments with
// the glob characters * ? and [...] (path.Match syntax, which never crosses a "/"), "**"
// as a whole segment (any number of directories, including none), and "!" lines. Any other
// form fails loudly rather than being checked with the wrong meaning.
func parseIgnore(data []byte, name string) (*ignoreFile, error) {
	f := &ignoreFile{name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		if n == 1 {
			raw = strings.TrimPrefix(raw, "\uFEFF")
		}
		// As in Docker: a comment is a line starting with "#" before trimming.
		if strings.HasPrefix(raw, "#") {
			continue
		}
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		p := ignorePattern{line: n, text: text}
		pat := text
		if strings.HasPrefix(pat, "!") {
			p.include = true
			pat = strings.TrimSpace(pat[1:])
		}
		bad := func(why string) error {
			return fmt.Errorf("%s:%d: unsupported .dockerignore pattern '%s': %s (hack/verifydockerfiles cannot check it; extend it or write the pattern differently)", name, n, text, why)
		}
		if strings.Contains(pat, `\`) {
			return nil, bad(`backslash escapes are not supported`)
		}
		pat = strings.TrimPrefix(path.Clean(pat), "/")
		if pat == "" || pat == "." || pat == ".." || strings.HasPrefix(pat, "../") {
			return nil, bad("it does not name a path inside the build context")
		}
		for _, seg := range strings.Split(pat, "/") {
			if strings.Contains(seg, "**") && seg != "**" {
				return nil, bad(`"**" is supported only as a whole path segment, as in **/x or x/**`)
			}
			if _, err := path.Match(seg, ""); err != nil {
				return nil, bad(err.Error())
			}
			p.segs = append(p.segs, seg)
		}
		f.patterns = append(f.patterns, p)
	}
	return f, sc.Err()
}

// excluded reports whether the context-relative file path rel is left out of the build
// context, and the line that decided it (nil when no line matched).
func (f *ignoreFile) excluded(rel string) (bool, *ignorePattern) {
	segs := strings.Split(rel, "/")
	var decided *ignorePattern
	out := false
	for i := range f.patterns {
		p := &f.patterns[i]
		// A pattern matches a path when it matches the path itself or one of its parent
		// directories.
		for n := 1; n <= len(segs); n++ {
			if matchSegs(p.segs, segs[:n]) {
				out, decided = !p.include, p
				break
			}
		}
	}
	return out, decided
}

func matchSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegs(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], segs[0])
	return ok && matchSegs(pat[1:], segs[1:])
}
