package dockerfile

import (
	"fmt"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/stagehand-dev/stagehand/hack/images/shellscript"
)

// run reads a RUN of the final stage: a shell script, in shell form or as an exec form
// [<shell>, "-c", <script>], whose commands are mkdir and ln -s. It
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
	cmds, err := shellscript.Commands(script)
	if err != nil {
		return err
	}
	for _, cmd := range cmds {
		if len(cmd.Assigns) > 0 || len(cmd.Args) == 0 {
			return fmt.Errorf("RUN %q: variable assignments are not understood", script)
		}
		if err := fs.command(cmd.Args); err != nil {
			return fmt.Errorf("RUN %q: %w", script, err)
		}
	}
	return nil
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
