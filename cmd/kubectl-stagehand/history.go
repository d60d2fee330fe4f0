package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-dev/stagehand/internal/rollout"
)

func newHistoryCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var revision int64
	var output string
	cmd := &cobra.Command{
		Use:   "history dc/NAME",
		Short: "List the revisions with their status, cause and images; --revision N shows one template",
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "show the full pod template of this revision")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		if revision != 0 {
			template, err := c.RevisionTemplate(ctx, name, revision)
			if err != nil {
				return err
			}
			if output == "" {
				fmt.Fprintf(streams.Out, "deploymentconfig/%s revision %d:\n", name, revision)
				output = "yaml"
			}
			return printData(streams.Out, output, template)
		}
		entries, err := c.History(ctx, name)
		if err != nil {
			return err
		}
		if output != "" {
			return printData(streams.Out, output, entries)
		}
		printHistory(streams.Out, entries, time.Now())
		return nil
	})
	return cmd
}

// printHistory writes the history table.
func printHistory(out io.Writer, entries []rollout.HistoryEntry, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	notified := false // the NOTIFIED column only where a RolloutNotifier sent something
	for _, e := range entries {
		notified = notified || len(e.Notifications) > 0
	}
	header := "REVISION\tSTATUS\tCAUSE\tIMAGES\tCREATED"
	if notified {
		header += "\tNOTIFIED"
	}
	fmt.Fprintln(w, header)
	for _, e := range entries {
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s ago", e.Revision, e.StatusText(), e.Cause,
			strings.Join(e.Images, ","), duration.HumanDuration(now.Sub(e.Created.Time)))
		if notified {
			line += "\t" + rollout.NotifiedText(e.Notifications)
		}
		fmt.Fprintln(w, line)
	}
	_ = w.Flush()
}

func checkOutput(output string) error {
	switch output {
	case "", "json", "yaml":
		return nil
	}
	return usagef("--output %q is not supported: use json or yaml", output)
}

// printData writes v as indented JSON or as YAML.
func printData(out io.Writer, output string, v any) error {
	if output == "json" {
		raw, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(raw))
		return err
	}
	raw, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = out.Write(raw)
	return err
}

func newUndoCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var opts rollout.RollbackOptions
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "undo dc/NAME",
		Short: "Roll back to an earlier revision, with exactly the images it ran",
		Long: `Roll back to an earlier revision: by default the newest Complete revision before the
latest one. The rollback takes that revision's pod template, with exactly the images it ran
(digests included), and starts a new revision with the cause "Rollback to N"; latestVersion
only moves forward. The flags also take the revision's triggers, strategy and scaling
settings (a configuration rollback rather than an application one).

Automatic ImageChange triggers are switched off, so that the next image push does not undo
the rollback. Switch them on again once the image is fixed.`,
	}
	cmd.Flags().Int64Var(&opts.ToRevision, "to-revision", 0, "the revision to roll back to (default: the previous Complete revision)")
	cmd.Flags().BoolVar(&opts.ChangeTriggers, "change-triggers", false, "also take spec.triggers from that revision")
	cmd.Flags().BoolVar(&opts.ChangeStrategy, "change-strategy", false, "also take spec.strategy from that revision")
	cmd.Flags().BoolVar(&opts.ChangeScalingSettings, "change-scaling-settings", false, "also take spec.replicas and spec.selector from that revision")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the change of the spec as a diff, and change nothing")
	cmd.RunE = runOn(flags, func(ctx context.Context, c *rollout.Client, name string) error {
		if opts.ToRevision < 0 {
			return usagef("--to-revision must be a revision number, not %d", opts.ToRevision)
		}
		plan, err := c.PlanRollback(ctx, name, opts)
		if err != nil {
			return err
		}
		if dryRun {
			diff, err := plan.Diff()
			if err != nil {
				return err
			}
			if diff == "" {
				diff = "(the spec would not change; the rollback would start a new revision of it)\n"
			}
			fmt.Fprint(streams.Out, diff)
			printTriggerNote(streams.Out, plan, "would be")
			fmt.Fprintf(streams.Out, "Dry run: deploymentconfig/%s was not changed.\n", name)
			return nil
		}
		plan, req, err := c.Rollback(ctx, plan, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "deploymentconfig/%s rolled back to revision %d: revision %d starts (cause Rollback to %d)\n",
			name, plan.To, req.Revision, plan.To)
		for _, ctr := range plan.Spec.Template.Spec.Containers {
			fmt.Fprintf(streams.Out, "  %s: %s\n", ctr.Name, ctr.Image)
		}
		if plan.Supersedes != "" {
			fmt.Fprintf(streams.Out, "Revision %s, still in progress, is superseded.\n", plan.Supersedes)
		}
		printTriggerNote(streams.Out, plan, "were")
		return nil
	})
	return cmd
}

func printTriggerNote(out io.Writer, plan *rollout.RollbackPlan, verb string) {
	if len(plan.DisabledTriggers) == 0 {
		return
	}
	fmt.Fprintf(out, "Automatic ImageChange triggers %s switched off, so that the next image push does not undo the rollback:\n", verb)
	for _, t := range plan.DisabledTriggers {
		fmt.Fprintf(out, "  %s\n", t)
	}
	fmt.Fprintln(out, "Switch them on again (spec.triggers[].imageChangeParams.automatic: true) once the image is fixed.")
}
