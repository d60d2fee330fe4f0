package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/rollout"
)

func newRolloutCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND dc/NAME",
		Short: "Start, stop, retry, inspect and roll back the rollouts of a DeploymentConfig",
	}
	cmd.AddCommand(
		newLatestCommand(flags, streams),
		newCancelCommand(flags, streams),
		newRetryCommand(flags, streams),
		newHistoryCommand(flags, streams),
		newUndoCommand(flags, streams),
		newPauseCommand(flags, streams),
		newResumeCommand(flags, streams),
		newPromoteCommand(flags, streams),
		newStatusCommand(flags, streams),
		newLogsCommand(flags, streams),
	)
	return cmd
}

// runOn is the shape of every rollout subcommand: one DeploymentConfig argument and a client.
func runOn(flags *genericclioptions.ConfigFlags, run func(ctx context.Context, c *rollout.Client, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s takes one DeploymentConfig (NAME or dc/NAME), got %d arguments", cmd.CommandPath(), len(args))
		}
		name, err := parseRef(args[0])
		if err != nil {
			return err
		}
		c, err := newClient(flags)
		if err != nil {
			return err
		}
		return run(cmd.Context(), c, name)
	}
}

func newLatestCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "latest dc/NAME",
		Short: "Start a new rollout of the current spec now (cause Manual), even without triggers",
		Long: `Start a new rollout of the current spec, even when the template is unchanged and the
DeploymentConfig has no triggers. The new revision records the cause Manual. It is refused
while the DeploymentConfig is paused or while a rollout is in flight.`,
	}
	cmd.Flags().StringVar(&message, "message", "", "a note recorded in status.details.message")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		r, err := c.Latest(ctx, name, message)
		if err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "deploymentconfig/%s: rollout of revision %d requested (cause Manual)\n", name, r.Revision)
		fmt.Fprintf(streams.Out, "Follow it with: kubectl stagehand rollout status dc/%s\n", name)
		return nil
	})
	return cmd
}

func newCancelCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "cancel dc/NAME",
		Short: "Cancel the rollout in progress; the previous revision serves again",
		Long: `Cancel the rollout in progress. Its deployer and hook pods are deleted, the revision
becomes Failed with the reason Cancelled, and the newest Complete revision runs spec.replicas again.`,
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the controller to stop the rollout")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		r, err := c.Cancel(ctx, name, timeout)
		if err != nil {
			return err
		}
		if !r.Done {
			fmt.Fprintf(streams.Out, "revision %s is marked cancelled; the controller has not stopped it within %s (is it running?)\n", r.RevisionName, timeout)
			return nil
		}
		fmt.Fprintf(streams.Out, "revision %s cancelled: its deployer and hook pods are deleted\n", r.RevisionName)
		if r.Serving != "" {
			fmt.Fprintf(streams.Out, "revision %s serves again\n", r.Serving)
		}
		return nil
	})
	return cmd
}

func newRetryCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retry dc/NAME",
		Short: "Run the Failed latest revision again",
		Long: `Run the Failed latest revision again: its old deployer and hook pods and its exec hooks'
ExecutionHooks are deleted and the same revision is reset to New, so every hook runs again.
Only a Failed latest revision can be retried. While its failed hook runs, the retry waits
for that hook to end, then starts.`,
	}
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		r, err := c.Retry(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "revision %s will be retried\n", r.RevisionName)
		if r.WaitsFor != "" {
			fmt.Fprintf(streams.Out, "The retry waits: %s\n", r.WaitsFor)
		}
		fmt.Fprintf(streams.Out, "Follow it with: kubectl stagehand rollout status dc/%s\n", name)
		return nil
	})
	return cmd
}

func newPauseCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause dc/NAME",
		Short: "Stop new rollouts from starting (scaling still works)",
	}
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		changed, err := c.SetPaused(ctx, name, true)
		if err != nil {
			return err
		}
		if !changed {
			fmt.Fprintf(streams.Out, "deploymentconfig/%s is already paused\n", name)
			return nil
		}
		fmt.Fprintf(streams.Out, "deploymentconfig/%s paused\n", name)
		return nil
	})
	return cmd
}

func newStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status dc/NAME",
		Short: "Follow the latest rollout until it is Complete (exit 0) or Failed (exit 1)",
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait as long as the rollout takes)")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		err := c.Follow(ctx, name, streams.Out)
		var failed *rollout.RolloutFailed
		if errors.As(err, &failed) {
			fmt.Fprintf(streams.Out, "See the deployer's log: kubectl stagehand rollout logs dc/%s\n", name)
		}
		return err
	})
	return cmd
}

func newLogsCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var revision int64
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs dc/NAME",
		Short: "Print the log of a revision's deployer pod, which carries its hooks' logs",
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "the revision (default: the latest)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream the log until the deployer pod ends")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		if revision < 0 {
			return usagef("--revision must be a revision number, not %d", revision)
		}
		return c.Logs(ctx, name, revision, follow, streams.Out)
	})
	return cmd
}
