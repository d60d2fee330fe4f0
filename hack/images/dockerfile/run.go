package dockerfile

import (
	"fmt"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// run reads a RUN of the final stage: a shell script, in shell form or as an exec form
// [<shell>, "-c", <script>], whose commands are mkdir and ln -s joined by && or ;. It
// records the folders and links they make and refuses every other command.
func (fs *FinalStage) run(c *instructions.RunCommand) error {
	if len(c.FlagsUsed) > 0 {
		return fmt.Errorf("RUN --%s is not supported in the final stage", c.FlagsUsed[0])
	}
	var script string
	switch {
	case c.PrependShell:
		script = strings.Join(c.CmdLine, " ")
	case len(c.CmdLine) == 3 && path.Base(c.CmdLine[0]) == "sh" && c.CmdLine[1] == "-c":
		script = c.CmdLine[2]
	default:
		return fmt.Errorf("RUN %q is neither a shell script nor [sh, -c, script]", c.CmdLine)
	}
	words, err := shell.NewLex('\\').ProcessWords(script, shell.EnvsFromSlice(nil))
	if err != nil {
		return fmt.Errorf("splitting the RUN script into words: %w", err)
	}
	for _, cmd := range splitCommands(words) {
		if err := fs.command(cmd); err != nil {
			return fmt.Errorf("RUN %q: %w", script, err)
		}
	}
	return nil
}

// splitCommands cuts the words of a script at && and ; (also a ; that ends a word).
func splitCommands(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		if len(w) > 1 && strings.HasSuffix(w, ";") {
			cur, w = append(cur, strings.TrimSuffix(w, ";")), ";"
		}
		if w == "&&" || w == ";" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, w)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func (fs *FinalStage) command(cmd []string) error {
	flags, args := options(cmd[1:])
	switch cmd[0] {
	case "mkdir":
		if strings.Trim(flags, "p") != "" || len(args) == 0 {
			return fmt.Errorf("only mkdir [-p] DIR... is understood, not %q", cmd)
		}
		for _, d := range args {
			fs.Dirs = append(fs.Dirs, fs.abs(d))
		}
	case "ln":
		if !strings.Contains(flags, "s") || strings.Trim(flags, "sfn") != "" || len(args) != 2 {
			return fmt.Errorf("only ln -s[f][n] TARGET LINK is understood, not %q", cmd)
		}
		fs.Links = append(fs.Links, Link{Path: fs.abs(args[1]), Target: args[0]})
	default:
		return fmt.Errorf("the command %q is not understood; teach hack/images/dockerfile and the image builder", cmd[0])
	}
	return nil
}

// options splits short options (-p, -sf) from the arguments, and returns the option
// letters joined.
func options(args []string) (string, []string) {
	var flags strings.Builder
	var rest []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			flags.WriteString(a[1:])
			continue
		}
		rest = append(rest, a)
	}
	return flags.String(), rest
}
