// Command kubectl-stagehand is the kubectl plugin of Stagehand: put it on the PATH and run
// `kubectl stagehand rollout ...` and `kubectl stagehand convert ...`. docs/cli.md
// describes every command.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/version"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := newRootCommand(streams).Execute(); err != nil {
		fmt.Fprintln(streams.ErrOut, "error:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 1 for every failure; a usage mistake is 2, like most command-line tools.
func exitCode(err error) int {
	var usage *usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// usageError is a mistake in the command line itself.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-stagehand",
		Short: "Operate Stagehand DeploymentConfigs: rollouts, history, rollback, and conversion from OpenShift",
		Long: `kubectl stagehand operates Stagehand DeploymentConfigs (deploymentconfigs.stagehand.dev).

  kubectl stagehand rollout latest|cancel|retry|history|undo|pause|resume|status|logs dc/NAME
  kubectl stagehand set image|env|resources|triggers|deployment-hook dc/NAME ...
  kubectl stagehand get dc/NAME [--watch [--until-complete]]
  kubectl stagehand exec run ACTION (-l SELECTOR | --pod NAME...) [-c CONTAINER...] [--wait]
  kubectl stagehand exec status HOOK
  kubectl stagehand defer status [POD] [-A]
  kubectl stagehand defer release POD [--reason TEXT]
  kubectl stagehand convert -f openshift-dc.yaml
  kubectl stagehand adopt deployment/NAME|statefulset/NAME [--dry-run=client|server] [-o yaml]
  kubectl stagehand eject dc/NAME [--yes]
  kubectl stagehand dashboard [--port 3100] [-n NS | -A] [--open]`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String("kubectl-stagehand"),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newRolloutCommand(flags, streams), newConvertCommand(streams), newExecCommand(flags, streams),
		newDeferCommand(flags, streams), newAdoptCommand(flags, streams), newEjectCommand(flags, streams))
	root.AddCommand(newSetCommand(flags, streams))
	root.AddCommand(newGetCommand(flags, streams))
	root.AddCommand(newDashboardCommand(flags, streams))
	return root
}
