package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
)

func newSetImageCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var o writeOptions
	var disableTrigger bool
	cmd := &cobra.Command{
		Use:   "image dc/NAME CONTAINER=IMAGE ...",
		Short: "Set the image of containers (init containers included) of a DeploymentConfig",
		Long: `Set the image of one or more containers of the pod template, init containers included;
*=IMAGE sets every container. With a ConfigChange trigger the change starts a rollout.

When an automatic ImageChange trigger writes a container's image, the trigger replaces the
image at the tag's next change: a warning says so, and --disable-trigger sets that trigger's
automatic to false in the same write.`,
		Example: `  kubectl stagehand set image dc/hello app=registry.example.com/team/hello:2
  kubectl stagehand set image dc/hello '*=registry.example.com/team/hello:2' --dry-run=server -o yaml`,
		ValidArgsFunction: completeDCThen(clients, containerCompletions("=")),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("set image takes a DeploymentConfig and at least one CONTAINER=IMAGE, got %d arguments", len(args))
			}
			if err := o.validate(); err != nil {
				return err
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			sets, err := dcedit.ParseImageArgs(args[1:])
			if err != nil {
				return usagef("%v", err)
			}
			c, err := clients()
			if err != nil {
				return err
			}
			return o.write(cmd.Context(), c, streams, name, "image", func(dc *v1alpha1.DeploymentConfig) (string, []string, error) {
				done, err := dcedit.SetImages(&dc.Spec.Template.Spec, sets)
				if err != nil {
					return "", nil, fmt.Errorf("deploymentconfig/%s: %w", name, err)
				}
				return strings.Join(done, ", "), imageTriggerWarnings(dc, done, disableTrigger), nil
			})
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&disableTrigger, "disable-trigger", false, "set automatic to false on the ImageChange triggers that write these containers' images")
	return cmd
}

// imageTriggerWarnings warns about each automatic ImageChange trigger that writes one of the
// containers set (CONTAINER=IMAGE), or, with disable, turns it to manual and says so.
func imageTriggerWarnings(dc *v1alpha1.DeploymentConfig, set []string, disable bool) []string {
	var out []string
	for _, s := range set {
		container, _, _ := strings.Cut(s, "=")
		t := dcedit.AutomaticImageTrigger(dc, container)
		if t == nil {
			continue
		}
		if disable {
			t.Automatic = false
			out = append(out, fmt.Sprintf("the ImageChange trigger on %s is now manual (automatic: false); turn it on again with: kubectl stagehand set triggers dc/%s --auto --from-image=%s", t.From.Image, dc.Name, t.From.Image))
			continue
		}
		out = append(out, fmt.Sprintf("container %s follows %s through an automatic ImageChange trigger, which will set its image again at the tag's next change; add --disable-trigger to turn the trigger off", container, t.From.Image))
	}
	return out
}
