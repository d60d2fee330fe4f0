package main

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/deferrun"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

func newDeferCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newDeferCommandWith(func() (*rollout.Client, error) { return newClient(flags) }, streams)
}

func newDeferCommandWith(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "defer SUBCOMMAND",
		Short: "Show the pods whose DeferPolicy steps run, and release a stuck one",
	}
	cmd.AddCommand(newDeferStatusCommand(clients, streams), newDeferReleaseCommand(clients, streams))
	return cmd
}

// deferClient is the defer commands' client, from the kubeconfig's.
func deferClient(clients clientFunc) (*deferrun.Client, string, error) {
	c, err := clients()
	if err != nil {
		return nil, "", err
	}
	return &deferrun.Client{Kube: c.Kube, Stagehand: c.Stagehand}, c.Namespace, nil
}

func newDeferStatusCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "status [POD] [-A] [-o json|yaml]",
		Short: "List the pods in their defer phase; with POD, that pod's run and its step pods",
		Long: `List the pods in their defer phase: a DeferPolicy's steps run for them, or they are
Terminating and wait for the finalizer stagehand.dev/defer. With POD, show that pod whatever
its state, with the outcome of a finished run and its step pods.`,
		Example: `  kubectl stagehand defer status
  kubectl stagehand defer status web-7d9f-x2k4q
  kubectl stagehand defer status -A -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("defer status takes at most one pod name, got %d arguments", len(args))
			}
			if len(args) == 1 && allNamespaces {
				return usagef("defer status POD names a pod of one namespace: leave out -A")
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			d, ns, err := deferClient(clients)
			if err != nil {
				return err
			}
			pod := ""
			if len(args) == 1 {
				pod = strings.TrimPrefix(args[0], "pod/")
			}
			report, err := d.Status(cmd.Context(), ns, pod, allNamespaces)
			if err != nil {
				return err
			}
			if output != "" {
				return printData(streams.Out, output, report.Data())
			}
			report.Print(streams.Out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
	return cmd
}
