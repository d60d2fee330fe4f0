package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// clientFunc builds the clients; the tests give fake ones.
type clientFunc func() (*rollout.Client, error)

func newSetCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newSetCommandWith(func() (*rollout.Client, error) { return newClient(flags) }, streams)
}

func newSetCommandWith(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND dc/NAME",
		Short: "Change a DeploymentConfig's images, environment, resources, triggers and hooks",
	}
	cmd.AddCommand(
		newSetImageCommand(clients, streams),
		newSetEnvCommand(clients, streams),
		newSetResourcesCommand(clients, streams),
		newSetTriggersCommand(clients, streams),
		newSetHookCommand(clients, streams),
	)
	return cmd
}

// writeOptions are the flags of every set verb that writes: --dry-run and -o.
type writeOptions struct {
	dryRun string
	output string
}

func (o *writeOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.dryRun, "dry-run", "none", `"none", "client" (send nothing) or "server" (the apiserver checks the change and keeps nothing)`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "print the resulting DeploymentConfig: json or yaml")
}

func (o *writeOptions) validate() error {
	switch o.dryRun {
	case "none", "client", "server":
	default:
		return usagef(`--dry-run %q: use "none", "client" or "server"`, o.dryRun)
	}
	return checkOutput(o.output)
}

// change is one verb's edit of a fresh copy of the DeploymentConfig. It returns what the
// edit amounts to (for the no-op message, such as "app=stagehand/testapp:2") and warnings
// for stderr.
type change func(dc *v1alpha1.DeploymentConfig) (summary string, warnings []string, err error)

// write runs a set verb: Get, edit, Update, retried on a conflict. When the spec does not
// change it says so and writes nothing. what names the field for the messages ("image").
func (o *writeOptions) write(ctx context.Context, c *rollout.Client, streams genericiooptions.IOStreams, name, what string, edit change) error {
	dcs := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace)
	var result *v1alpha1.DeploymentConfig
	var summary string
	var warnings []string
	noop := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := dcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := current.DeepCopy()
		if summary, warnings, err = edit(next); err != nil {
			return err
		}
		if noop = equality.Semantic.DeepEqual(current.Spec, next.Spec); noop || o.dryRun == "client" {
			result = next
			return nil
		}
		opts := metav1.UpdateOptions{}
		if o.dryRun == "server" {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		result, err = dcs.Update(ctx, next, opts)
		return err
	})
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(streams.ErrOut, "Warning:", w)
	}
	ref := "deploymentconfig.stagehand.dev/" + name
	msgOut := streams.Out
	if o.output != "" {
		msgOut = streams.ErrOut
	}
	if noop {
		if summary != "" {
			summary = " (" + summary + ")"
		}
		fmt.Fprintf(msgOut, "%s: %s unchanged%s, nothing written\n", ref, what, summary)
	}
	if o.output != "" {
		return printDC(streams.Out, o.output, result)
	}
	if !noop {
		fmt.Fprintf(msgOut, "%s %s updated%s\n", ref, what, dryRunNote(o.dryRun))
	}
	return nil
}

func dryRunNote(dryRun string) string {
	switch dryRun {
	case "client":
		return " (dry run)"
	case "server":
		return " (server dry run)"
	}
	return ""
}

// printDC prints the DeploymentConfig as kubectl get -o does, without managedFields.
func printDC(out io.Writer, output string, dc *v1alpha1.DeploymentConfig) error {
	dc = dc.DeepCopy()
	dc.APIVersion, dc.Kind = v1alpha1.SchemeGroupVersion.String(), "DeploymentConfig"
	dc.ManagedFields = nil
	return printData(out, output, dc)
}

// getDC reads the DeploymentConfig for the verbs that only read (--list).
func getDC(ctx context.Context, c *rollout.Client, name string) (*v1alpha1.DeploymentConfig, error) {
	return c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
}
