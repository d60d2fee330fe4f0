package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/rollout"
)

func newResumeCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume dc/NAME",
		Short: "Let rollouts start again, and let a rollout paused at a step go on",
		Long: `Unpause a paused DeploymentConfig: a change made while paused rolls out now. And when
the in-flight rollout waits at a pause step of rollingParams.steps, that step ends and the
rollout goes on to the next one.`,
	}
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		changed, err := c.SetPaused(ctx, name, false)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(streams.Out, "deploymentconfig/%s resumed\n", name)
		}
		stepped, err := c.ResumeStep(ctx, name)
		if err != nil {
			return err
		}
		if stepped != nil {
			fmt.Fprintf(streams.Out, "revision %s: step %d/%d resumed\n", stepped.RevisionName, stepped.Step.Step, stepped.Step.Total)
		}
		if !changed && stepped == nil {
			fmt.Fprintf(streams.Out, "deploymentconfig/%s is not paused, and its rollout is not paused at a step\n", name)
		}
		return nil
	})
	return cmd
}

func newPromoteCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote dc/NAME",
		Short: "Skip the remaining steps of the in-flight rollout and complete it",
		Long: `Skip the remaining steps (rollingParams.steps) of the in-flight rollout: a pause ends at
once, a setReplicas or hook step that is running finishes first, no other step runs, and
the rollout completes to 100% within maxSurge and maxUnavailable, then runs the post hook. It is refused when no rollout is in flight or when
the rollout has no steps.`,
	}
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		stepped, err := c.Promote(ctx, name)
		if err != nil {
			return err
		}
		at := ""
		if stepped.Step.Step > 0 {
			at = fmt.Sprintf(" at step %d/%d", stepped.Step.Step, stepped.Step.Total)
		}
		fmt.Fprintf(streams.Out, "revision %s promoted%s: it completes to 100%%\n", stepped.RevisionName, at)
		fmt.Fprintf(streams.Out, "Follow it with: kubectl stagehand rollout status dc/%s\n", name)
		return nil
	})
	return cmd
}
