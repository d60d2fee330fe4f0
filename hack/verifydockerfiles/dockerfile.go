package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
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

var (
	heredocRE   = regexp.MustCompile(`<<-?\s*["']?[A-Za-z_]`)
	directiveRE = regexp.MustCompile(`^#\s*([A-Za-z]+)\s*=\s*(.*)$`)
	goBuildRE   = regexp.MustCompile(`\bgo\s+(build|install)\b`)
)

// instr is one Dockerfile instruction, its continuation lines joined.
type instr struct {
	line      int
	cmd, args string
}

// errAt is an error about line of the Dockerfile called name.
func errAt(name string, line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
}

// parseDockerfile reads the Dockerfile at file; root is the build context on the host,
// used to tell files from directories and to expand wildcards in COPY sources. name is
// how messages refer to the Dockerfile.
func parseDockerfile(file, name, root string) ([]goBuild, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	instrs, err := instructions(string(data), name)
	if err != nil {
		return nil, err
	}
	return goBuilds(instrs, name, root)
}

// instructions joins continuation lines and drops comments and blank lines, as Docker does
// (also inside a continued instruction). Parser directives come first.
func instructions(data, name string) ([]instr, error) {
	var instrs []instr
	var cur strings.Builder
	curLine := 0
	directives := true
	for i, l := range strings.Split(data, "\n") {
		n := i + 1
		l = strings.TrimRight(l, " \t\r")
		trimmed := strings.TrimSpace(l)
		if directives {
			if m := directiveRE.FindStringSubmatch(trimmed); m != nil {
				if strings.EqualFold(m[1], "escape") && strings.TrimSpace(m[2]) != `\` {
					return nil, errAt(name, n, "unsupported parser directive %q", trimmed)
				}
				continue
			}
			directives = false
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			curLine = n
		}
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		cmd = strings.ToUpper(cmd)
		args = strings.TrimSpace(args)
		if (cmd == "RUN" || cmd == "COPY" || cmd == "ADD") && heredocRE.MatchString(args) {
			return nil, errAt(name, curLine, "heredocs are not supported by this check")
		}
		instrs = append(instrs, instr{curLine, cmd, args})
	}
	if cur.Len() > 0 {
		return nil, errAt(name, curLine, "the file ends inside a continued line")
	}
	return instrs, nil
}

// goBuilds follows the stages, their working directories and COPY/ADD instructions, and
// returns every go build or go install with what was copied into its stage before it.
func goBuilds(instrs []instr, name, root string) ([]goBuild, error) {
	stages := map[string]*stage{}
	var st *stage
	var builds []goBuild
	for _, in := range instrs {
		if in.cmd != "FROM" && st == nil {
			if in.cmd == "ARG" {
				continue
			}
			return nil, errAt(name, in.line, "%s before the first FROM", in.cmd)
		}
		switch in.cmd {
		case "FROM":
			_, rest := splitFlags(strings.Fields(in.args))
			if len(rest) == 0 {
				return nil, errAt(name, in.line, "FROM without an image")
			}
			st = &stage{workdir: "/"}
			if parent, ok := stages[strings.ToLower(rest[0])]; ok {
				st.workdir = parent.workdir
				st.copies = append(st.copies, parent.copies...)
			}
			if len(rest) == 3 && strings.EqualFold(rest[1], "AS") {
				st.name = strings.ToLower(rest[2])
				stages[st.name] = st
			}
		case "WORKDIR":
			if strings.Contains(in.args, "$") {
				return nil, errAt(name, in.line, "WORKDIR with a variable is not supported by this check")
			}
			st.workdir = containerPath(st.workdir, in.args)
		case "COPY", "ADD":
			op, err := parseCopy(in.cmd, in.args, st, root)
			if err != nil {
				return nil, errAt(name, in.line, "%v", err)
			}
			if op != nil {
				op.line = in.line
				st.copies = append(st.copies, *op)
			}
		case "RUN":
			bs, err := parseRun(in.args, st.workdir)
			if err != nil {
				return nil, errAt(name, in.line, "%v", err)
			}
			if len(bs) == 0 && goBuildRE.MatchString(in.args) {
				return nil, errAt(name, in.line, "RUN mentions go build or go install in a form this check does not parse")
			}
			for _, b := range bs {
				b.line = in.line
				b.copies = append([]copyOp(nil), st.copies...)
				builds = append(builds, b)
			}
		}
	}
	return builds, nil
}

// splitFlags splits leading --flag and --flag=value words from the rest.
func splitFlags(words []string) (map[string]string, []string) {
	flags := map[string]string{}
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		flags[k] = v
		words = words[1:]
	}
	return flags, words
}

func containerPath(workdir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}

// parseCopy returns nil for a copy that takes nothing from the build context (--from, or
// an ADD of a URL).
func parseCopy(cmd, args string, st *stage, root string) (*copyOp, error) {
	var words []string
	if strings.HasPrefix(args, "[") {
		if err := json.Unmarshal([]byte(args), &words); err != nil {
			return nil, fmt.Errorf("%s: bad JSON form: %v", cmd, err)
		}
	} else {
		words = strings.Fields(args)
	}
	flags, words := splitFlags(words)
	if _, ok := flags["from"]; ok {
		return nil, nil
	}
	for _, f := range []string{"parents", "exclude"} {
		if _, ok := flags[f]; ok {
			return nil, fmt.Errorf("%s --%s is not supported by this check", cmd, f)
		}
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("%s needs a source and a destination", cmd)
	}
	rawDest := words[len(words)-1]
	if strings.Contains(args, "$") {
		return nil, fmt.Errorf("%s with a variable is not supported by this check", cmd)
	}
	dest := containerPath(st.workdir, rawDest)
	var srcs []string
	wildcard := false
	for _, s := range words[:len(words)-1] {
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
				return nil, fmt.Errorf("%s source %q: %v", cmd, s, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("%s source %q matches nothing in the build context", cmd, s)
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
		return nil, nil
	}
	// The destination is a directory when it says so, when there are several sources, or
	// when it is a directory that exists in the image for sure (the WORKDIR or above it).
	destIsDir := strings.HasSuffix(rawDest, "/") || len(srcs) > 1 || wildcard ||
		dest == st.workdir || strings.HasPrefix(st.workdir, strings.TrimSuffix(dest, "/")+"/")
	op := &copyOp{}
	for _, rel := range srcs {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("%s source %q is not in the build context: %v", cmd, rel, err)
		}
		s := copySrc{rel: rel, isDir: fi.IsDir(), to: dest}
		if !s.isDir && destIsDir {
			s.to = path.Join(dest, path.Base(rel))
		}
		op.srcs = append(op.srcs, s)
	}
	return op, nil
}

// parseRun finds the `go build` and `go install` commands of a RUN, following `cd` and
// literal VAR=value prefixes.
func parseRun(args, workdir string) ([]goBuild, error) {
	var script string
	var flags map[string]string
	if strings.HasPrefix(args, "[") {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			return nil, fmt.Errorf("RUN: bad JSON form: %v", err)
		}
		if len(argv) >= 3 && strings.HasSuffix(argv[0], "sh") && argv[1] == "-c" {
			script = argv[2]
		} else {
			script = shellQuote(argv)
		}
	} else {
		var words []string
		flags, words = splitFlags(strings.Fields(args))
		script = strings.Join(words, " ")
	}
	toks, err := shellWords(script)
	if err != nil {
		return nil, fmt.Errorf("RUN: %v", err)
	}
	var builds []goBuild
	dir := workdir
	for _, cmd := range splitCommands(toks) {
		env := map[string]string{}
		for len(cmd) > 0 && (cmd[0] == "env" || isAssignment(cmd[0])) {
			if k, v, ok := strings.Cut(cmd[0], "="); ok && cmd[0] != "env" && !strings.Contains(v, "$") {
				env[k] = v
			}
			cmd = cmd[1:]
		}
		if len(cmd) == 0 {
			continue
		}
		if cmd[0] == "cd" && len(cmd) == 2 && !strings.Contains(cmd[1], "$") {
			dir = containerPath(dir, cmd[1])
			continue
		}
		if cmd[0] != "go" || len(cmd) < 2 || (cmd[1] != "build" && cmd[1] != "install") {
			continue
		}
		if v, ok := flags["mount"]; ok && strings.Contains(v, "type=bind") {
			return nil, fmt.Errorf("RUN --mount=type=bind with go build is not supported by this check")
		}
		b, err := parseGoBuild(cmd[2:], dir)
		if err != nil {
			return nil, err
		}
		b.env = env
		builds = append(builds, b)
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
