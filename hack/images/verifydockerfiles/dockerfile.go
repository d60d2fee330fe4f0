package main

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/stagehand-dev/stagehand/hack/images/shellscript"
)

// A Dockerfile, reduced to what the check needs: which context files each stage copies
// where, and the `go build` commands it runs.

// copyOp is one COPY or ADD from the build context.
type copyOp struct {
	line int
	srcs []copySrc
}

type copySrc struct {
	rel   string // context-relative, slash-separated, "." for the context root
	isDir bool
	to    string // absolute container path: the directory its contents go to, or the file
}

// goBuild is one `go build` or `go install` in a RUN.
type goBuild struct {
	line   int
	dir    string            // absolute container directory it runs in
	env    map[string]string // literal VAR=value assignments before it
	flags  []string          // -tags and -mod, passed on to go list
	pkgs   []string
	copies []copyOp // every context copy visible to the RUN
}

type stage struct {
	name    string
	workdir string
	copies  []copyOp
}

var goBuildRE = regexp.MustCompile(`\bgo\s+(build|install)\b`)

// errAt is an error about line of the Dockerfile called name.
func errAt(name string, line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
}

func lineOf(c instructions.Command) int {
	if l := c.Location(); len(l) > 0 {
		return l[0].Start.Line
	}
	return 0
}

// parseDockerfile reads the Dockerfile at file with BuildKit's parser; root is the build
// context on the host, used to tell files from directories and to expand wildcards in COPY
// sources. name is how messages refer to the Dockerfile.
func parseDockerfile(file, name, root string) ([]goBuild, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	stages, _, err := instructions.Parse(res.AST, linter.New(&linter.Config{SkipAll: true}))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return goBuilds(stages, name, root)
}

// goBuilds follows the stages, their working directories and COPY/ADD instructions, and
// returns every go build or go install with what was copied into its stage before it.
func goBuilds(stages []instructions.Stage, name, root string) ([]goBuild, error) {
	named := map[string]*stage{}
	var builds []goBuild
	for _, s := range stages {
		st := &stage{name: s.Name, workdir: "/"}
		if parent, ok := named[strings.ToLower(s.BaseName)]; ok {
			st.workdir = parent.workdir
			st.copies = append(st.copies, parent.copies...)
		}
		if st.name != "" {
			named[st.name] = st
		}
		for _, c := range s.Commands {
			bs, err := st.apply(c, root)
			if err != nil {
				return nil, errAt(name, lineOf(c), "%v", err)
			}
			builds = append(builds, bs...)
		}
	}
	return builds, nil
}

// apply records what a command of the stage does to the build context's files, and returns
// the go builds of a RUN.
func (st *stage) apply(c instructions.Command, root string) ([]goBuild, error) {
	switch c := c.(type) {
	case *instructions.WorkdirCommand:
		if strings.Contains(c.Path, "$") {
			return nil, fmt.Errorf("WORKDIR with a variable is not supported by this check")
		}
		st.workdir = containerPath(st.workdir, c.Path)
	case *instructions.CopyCommand:
		if c.From != "" {
			return nil, nil
		}
		if c.Parents || len(c.ExcludePatterns) > 0 {
			return nil, fmt.Errorf("COPY --parents and --exclude are not supported by this check")
		}
		return nil, st.addCopy("COPY", c.SourcesAndDest, lineOf(c), root)
	case *instructions.AddCommand:
		if len(c.ExcludePatterns) > 0 {
			return nil, fmt.Errorf("ADD --exclude is not supported by this check")
		}
		return nil, st.addCopy("ADD", c.SourcesAndDest, lineOf(c), root)
	case *instructions.RunCommand:
		bs, err := parseRun(c, st.workdir)
		if err != nil {
			return nil, err
		}
		for i := range bs {
			bs[i].line = lineOf(c)
			bs[i].copies = append([]copyOp(nil), st.copies...)
		}
		return bs, nil
	}
	return nil, nil
}

func containerPath(workdir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}

// addCopy records a COPY or ADD from the build context (ADD's URLs are not the context).
func (st *stage) addCopy(cmd string, sd instructions.SourcesAndDest, line int, root string) error {
	if len(sd.SourceContents) > 0 {
		return fmt.Errorf("%s of a heredoc is not supported by this check", cmd)
	}
	if strings.Contains(sd.DestPath+strings.Join(sd.SourcePaths, " "), "$") {
		return fmt.Errorf("%s with a variable is not supported by this check", cmd)
	}
	rawDest := sd.DestPath
	dest := containerPath(st.workdir, rawDest)
	var srcs []string
	wildcard := false
	for _, s := range sd.SourcePaths {
		if cmd == "ADD" && strings.Contains(s, "://") {
			continue // a URL, not the context
		}
		rel := path.Clean(strings.TrimPrefix(path.Clean("/"+s), "/"))
		if rel == "" {
			rel = "."
		}
		if strings.ContainsAny(rel, "*?[") {
			wildcard = true
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return fmt.Errorf("%s source %q: %w", cmd, s, err)
			}
			if len(matches) == 0 {
				return fmt.Errorf("%s source %q matches nothing in the build context", cmd, s)
			}
			for _, m := range matches {
				r, _ := filepath.Rel(root, m)
				srcs = append(srcs, filepath.ToSlash(r))
			}
			continue
		}
		srcs = append(srcs, rel)
	}
	if len(srcs) == 0 {
		return nil
	}
	// The destination is a directory when it says so, when there are several sources, or
	// when it is a directory that exists in the image for sure (the WORKDIR or above it).
	destIsDir := strings.HasSuffix(rawDest, "/") || len(srcs) > 1 || wildcard ||
		dest == st.workdir || strings.HasPrefix(st.workdir, strings.TrimSuffix(dest, "/")+"/")
	op := copyOp{line: line}
	for _, rel := range srcs {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("%s source %q is not in the build context: %w", cmd, rel, err)
		}
		s := copySrc{rel: rel, isDir: fi.IsDir(), to: dest}
		if !s.isDir && destIsDir {
			s.to = path.Join(dest, path.Base(rel))
		}
		op.srcs = append(op.srcs, s)
	}
	st.copies = append(st.copies, op)
	return nil
}

// parseRun finds the `go build` and `go install` commands of a RUN, following `cd` and
// literal VAR=value prefixes. The script is read with mvdan.cc/sh's parser.
func parseRun(c *instructions.RunCommand, workdir string) ([]goBuild, error) {
	if len(c.Files) > 0 {
		return nil, fmt.Errorf("RUN with a heredoc is not supported by this check")
	}
	var cmds []shellscript.Command
	script := strings.Join(c.CmdLine, " ")
	switch {
	case c.PrependShell:
	case len(c.CmdLine) >= 3 && strings.HasSuffix(c.CmdLine[0], "sh") && c.CmdLine[1] == "-c":
		script = c.CmdLine[2]
	default:
		cmds = []shellscript.Command{{Args: c.CmdLine}} // exec form: the words as they are
	}
	if cmds == nil {
		var err error
		if cmds, err = shellscript.Commands(script); err != nil {
			return nil, fmt.Errorf("RUN: %w", err)
		}
	}
	var builds []goBuild
	dir := workdir
	for _, cmd := range cmds {
		env := map[string]string{}
		for _, a := range cmd.Assigns {
			if !strings.Contains(a.Value, "$") {
				env[a.Name] = a.Value
			}
		}
		args := cmd.Args
		if len(args) > 0 && args[0] == "env" {
			args = args[1:]
		}
		if len(args) == 2 && args[0] == "cd" && !strings.Contains(args[1], "$") {
			dir = containerPath(dir, args[1])
			continue
		}
		if len(args) < 2 || args[0] != "go" || (args[1] != "build" && args[1] != "install") {
			continue
		}
		// The mounts' options are read when the command is expanded; the words stay as
		// written.
		if err := c.Expand(func(w string) (string, error) { return w, nil }); err != nil {
			return nil, fmt.Errorf("RUN --mount: %w", err)
		}
		for _, m := range instructions.GetMounts(c) {
			if m.Type == instructions.MountTypeBind {
				return nil, fmt.Errorf("RUN --mount=type=bind with go build is not supported by this check")
			}
		}
		b, err := parseGoBuild(args[2:], dir)
		if err != nil {
			return nil, err
		}
		b.env = env
		builds = append(builds, b)
	}
	if len(builds) == 0 && goBuildRE.MatchString(script) {
		return nil, fmt.Errorf("RUN mentions go build or go install in a form this check does not parse")
	}
	return builds, nil
}

// goBuildValueFlags are the build flags that take a value in the next word.
var goBuildValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "asmflags": true, "buildmode": true, "compiler": true,
	"covermode": true, "coverpkg": true, "gccgoflags": true, "gcflags": true,
	"installsuffix": true, "ldflags": true, "mod": true, "modfile": true, "overlay": true,
	"pgo": true, "pkgdir": true, "tags": true, "toolexec": true,
}

func parseGoBuild(args []string, dir string) (goBuild, error) {
	b := goBuild{dir: dir}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			b.pkgs = append(b.pkgs, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") {
			if strings.Contains(a, "$") {
				return b, fmt.Errorf("go build of %q: a package with a variable is not supported by this check", a)
			}
			b.pkgs = append(b.pkgs, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && goBuildValueFlags[name] {
			if i+1 >= len(args) {
				return b, fmt.Errorf("go build: flag %s without a value", a)
			}
			i++
			value = args[i]
		}
		switch name {
		case "C":
			b.dir = containerPath(b.dir, value)
		case "tags", "mod":
			b.flags = append(b.flags, "-"+name+"="+value)
		}
	}
	if len(b.pkgs) == 0 {
		b.pkgs = []string{"."}
	}
	return b, nil
}
