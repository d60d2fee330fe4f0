// Package dockerfile reads what the final stage of a Dockerfile makes of its image: user,
// entrypoint, environment, ports, the files it copies from a build stage and the links and
// folders its RUN lines make. It parses with BuildKit's own Dockerfile parser; the shell
// commands of RUN it understands only as far as mkdir and ln -s go, and it refuses anything
// else, so that an image built without Docker cannot silently miss a step.
package dockerfile

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Link is a symbolic link: Path points to Target.
type Link struct {
	Path   string
	Target string
}

// Copy is a COPY --from=<stage> of the final stage, with its destination made absolute
// (and the source's base name appended when the destination is a folder).
type Copy struct {
	From string
	Src  string
	Dest string
	Line int
}

// FinalStage is what the last stage of a Dockerfile sets.
type FinalStage struct {
	From       string   // the base image, as written
	User       string   // the last USER
	Entrypoint []string // the last ENTRYPOINT, exec form
	Cmd        []string // the last CMD, exec form
	Env        []string // every ENV, KEY=VALUE, in order
	WorkDir    string   // the last WORKDIR
	Expose     []string // EXPOSE ports with their protocol, 8080/tcp, in the parser's order
	Copies     []Copy
	Links      []Link
	Dirs       []string // folders made by mkdir
}

// Read parses a Dockerfile and returns its final stage.
func Read(r io.Reader) (FinalStage, error) {
	var fs FinalStage
	res, err := parser.Parse(r)
	if err != nil {
		return fs, fmt.Errorf("parsing the Dockerfile: %w", err)
	}
	stages, _, err := instructions.Parse(res.AST, linter.New(&linter.Config{SkipAll: true}))
	if err != nil {
		return fs, fmt.Errorf("reading the Dockerfile's instructions: %w", err)
	}
	if len(stages) == 0 {
		return fs, fmt.Errorf("the Dockerfile has no FROM")
	}
	last := stages[len(stages)-1]
	fs.From = last.BaseName
	for _, c := range last.Commands {
		if err := fs.apply(c); err != nil {
			return fs, fmt.Errorf("line %d: %w", line(c), err)
		}
	}
	return fs, nil
}

// ReadBytes is Read of a Dockerfile's text.
func ReadBytes(data []byte) (FinalStage, error) { return Read(bytes.NewReader(data)) }

func line(c instructions.Command) int {
	if l := c.Location(); len(l) > 0 {
		return l[0].Start.Line
	}
	return 0
}

func (fs *FinalStage) apply(c instructions.Command) error {
	if s, ok := c.(fmt.Stringer); ok && strings.Contains(s.String(), "$") {
		return fmt.Errorf("%q uses a variable, which this reader does not expand", s.String())
	}
	switch c := c.(type) {
	case *instructions.UserCommand:
		fs.User = c.User
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			// The lexer takes the quotes off, as docker build does.
			v, _, err := shell.NewLex('\\').ProcessWord(kv.Value, shell.EnvsFromSlice(nil))
			if err != nil {
				return fmt.Errorf("reading ENV %s: %w", kv.Key, err)
			}
			fs.Env = append(fs.Env, kv.Key+"="+v)
		}
	case *instructions.WorkdirCommand:
		fs.WorkDir = fs.abs(c.Path)
	case *instructions.ExposeCommand:
		for _, p := range c.Ports {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			fs.Expose = append(fs.Expose, p)
		}
	case *instructions.EntrypointCommand:
		fs.Entrypoint = execForm(c.ShellDependantCmdLine)
	case *instructions.CmdCommand:
		fs.Cmd = execForm(c.ShellDependantCmdLine)
	case *instructions.CopyCommand:
		return fs.copy(c)
	case *instructions.RunCommand:
		return fs.run(c)
	default:
		return fmt.Errorf("the final stage's %s is not understood here; teach hack/images/dockerfile and the image builder",
			c.Name())
	}
	return nil
}

func execForm(c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return append([]string{"/bin/sh", "-c"}, strings.Join(c.CmdLine, " "))
	}
	return c.CmdLine
}

func (fs *FinalStage) abs(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	wd := fs.WorkDir
	if wd == "" {
		wd = "/"
	}
	return path.Join(wd, p)
}

func (fs *FinalStage) copy(c *instructions.CopyCommand) error {
	if c.From == "" {
		return fmt.Errorf("COPY from the build context into the final stage is not supported; copy from a build stage")
	}
	if c.Chown != "" || c.Chmod != "" || len(c.ExcludePatterns) > 0 || c.Parents || len(c.SourceContents) > 0 {
		return fmt.Errorf("COPY with --chown, --chmod, --exclude, --parents or a heredoc is not supported")
	}
	for _, src := range c.SourcePaths {
		dest := fs.abs(c.DestPath)
		if strings.HasSuffix(c.DestPath, "/") || len(c.SourcePaths) > 1 {
			dest = path.Join(dest, path.Base(src))
		}
		fs.Copies = append(fs.Copies, Copy{From: c.From, Src: src, Dest: dest, Line: line(c)})
	}
	return nil
}
