package main

// kubectl stagehand defer release: removes a pod's defer finalizer, stops its running
// steps and records why (docs/cli.md).

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newDeferReleaseCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "release POD [--reason TEXT]",
		Short: "Remove the finalizer stagehand.dev/defer from a pod on purpose, and stop its running steps",
		Long: `Remove the finalizer stagehand.dev/defer from POD without waiting for its DeferPolicy's
steps: in an emergency (a step that hangs, a controller that is down), or to uninstall
Stagehand. The step pods that still run for it are stopped, the remaining steps do not
run, and a Warning event DeferReleased with the reason is recorded on the pod.`,
		Example: `  kubectl stagehand defer release web-7d9f-x2k4q --reason "backup step hangs, INC-4711"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("defer release takes one pod name, got %d arguments", len(args))
			}
			d, ns, err := deferClient(clients)
			if err != nil {
				return err
			}
			name := strings.TrimPrefix(args[0], "pod/")
			res, err := d.Release(cmd.Context(), ns, name, reason)
			if res != nil {
				res.Print(streams.Out, streams.ErrOut)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the pod is released, recorded in the event")
	return cmd
}
