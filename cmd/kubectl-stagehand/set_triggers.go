package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
)

func newSetTriggersCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var o writeOptions
	var e dcedit.TriggerEdit
	cmd := &cobra.Command{
		Use:   "triggers dc/NAME [--from-config | --from-image=REPO:TAG -c CONTAINER,...] [--manual | --auto | --remove | --remove-all]",
		Short: "List or change the triggers that start a DeploymentConfig's rollouts",
		Long: `Without a change flag, list the triggers: a config row (AUTO true when a ConfigChange
trigger rolls out template changes) and one row per ImageChange trigger.

--from-config adds the ConfigChange trigger; --from-image=REPO:TAG -c CONTAINER[,CONTAINER]
adds an ImageChange trigger on that tag of a registry (or updates the one on that tag).
--manual turns the selected triggers (all of them without --from-config or --from-image) to
manual: an ImageChange trigger gets automatic false (a new digest is only recorded), and the
ConfigChange trigger, which has no such switch, is removed, as oc does; template changes then
roll out only with kubectl stagehand rollout latest. --auto turns them back (the ConfigChange
trigger is added again). --remove removes the selected triggers, --remove-all every trigger.`,
		Example: `  kubectl stagehand set triggers dc/hello
  kubectl stagehand set triggers dc/hello --manual
  kubectl stagehand set triggers dc/hello --from-image=registry.example.com/team/hello:stable -c app
  kubectl stagehand set triggers dc/hello --remove --from-config`,
		ValidArgsFunction: completeDCThen(clients, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("set triggers takes one DeploymentConfig (NAME or dc/NAME), got %d arguments", len(args))
			}
			if err := o.validate(); err != nil {
				return err
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			if err := e.Validate(); err != nil {
				return usagef("%v", err)
			}
			c, err := clients()
			if err != nil {
				return err
			}
			if !e.Changes() {
				dc, err := getDC(cmd.Context(), c, name)
				if err != nil {
					return err
				}
				if o.output != "" {
					return printData(streams.Out, o.output, dcedit.Rows(dc))
				}
				printTriggers(streams.Out, dc)
				return nil
			}
			return o.write(cmd.Context(), c, streams, name, "triggers", func(dc *v1alpha1.DeploymentConfig) (string, []string, error) {
				if err := e.Apply(dc); err != nil {
					return "", nil, fmt.Errorf("deploymentconfig/%s: %w", name, err)
				}
				return "", nil, nil
			})
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&e.FromConfig, "from-config", false, "the ConfigChange trigger: add it, or select it for --manual, --auto or --remove")
	f.StringVar(&e.FromImage, "from-image", "", "the ImageChange trigger on this tag (REPO:TAG): add or update it, or select it")
	f.StringSliceVarP(&e.Containers, "containers", "c", nil, "with --from-image, the containers whose image follows the tag")
	f.BoolVar(&e.Manual, "manual", false, "turn the triggers to manual (the ConfigChange trigger is removed)")
	f.BoolVar(&e.Auto, "auto", false, "turn the triggers to automatic (the ConfigChange trigger is added)")
	f.BoolVar(&e.Remove, "remove", false, "remove the triggers selected by --from-config or --from-image")
	f.BoolVar(&e.RemoveAll, "remove-all", false, "remove every trigger: rollouts start only by hand")
	_ = cmd.RegisterFlagCompletionFunc("containers", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if dc := completionDC(cmd, clients, args[0]); dc != nil {
			return containerCompletions("")(dc, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// printTriggers writes the trigger table of oc set triggers: NAME TYPE VALUE AUTO.
func printTriggers(out io.Writer, dc *v1alpha1.DeploymentConfig) {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTYPE\tVALUE\tAUTO")
	for _, r := range dcedit.Rows(dc) {
		fmt.Fprintf(w, "deploymentconfigs/%s\t%s\t%s\t%t\n", dc.Name, r.Type, r.Value, r.Auto)
	}
	_ = w.Flush()
}
