package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/webui"
)

func newDashboardCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := webui.Options{Out: streams.Out}
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "dashboard [--port 3100] [--address 127.0.0.1] [-n NS | -A] [--open]",
		Short: "Serve a live web dashboard of the DeploymentConfigs, with your own rights",
		Long: `Serve a web dashboard of the DeploymentConfigs (docs/dashboard.md): a live list, one
DC's revisions with the time of each stage, its pods, deployer and hook logs, a line that
says why a rollout waits, and the rollout verbs (promote, resume, pause, cancel, retry,
latest, undo), each after a confirmation.

It uses your kubeconfig: every read and every action is yours, and RBAC decides. It
listens on loopback by default and prints a URL with a random token; a request without
the token is refused. It opens a browser only with --open. Stop it with Ctrl-C.`,
		Example: `  kubectl stagehand dashboard
  kubectl stagehand dashboard -A --open`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().IntVar(&o.Port, "port", 3100, "the port to listen on (0 picks a free one)")
	cmd.Flags().StringVar(&o.Address, "address", "127.0.0.1", "the address to listen on; anything but loopback lets other machines reach it")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "show the DeploymentConfigs of every namespace")
	cmd.Flags().BoolVar(&o.Open, "open", false, "open the dashboard in a browser")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		config, err := flags.ToRESTConfig()
		if err != nil {
			return fmt.Errorf("loading the kubeconfig: %w", err)
		}
		if !allNamespaces {
			if o.Namespace, _, err = flags.ToRawKubeConfigLoader().Namespace(); err != nil {
				return fmt.Errorf("finding the namespace: %w", err)
			}
		}
		o.Config = config
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return webui.Serve(ctx, o)
	}
	return cmd
}
