package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/adopt"
)

func newAdoptCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var o writeOptions
	var timeout time.Duration
	var keepHistory, retargetHPA bool
	cmd := &cobra.Command{
		Use:   "adopt deployment/NAME|statefulset/NAME [--dry-run=client|server] [-o yaml|json]",
		Short: "Turn a running Deployment or StatefulSet into a DeploymentConfig of the same name, with no pod restarted",
		Long: `Turn a running Deployment into a DeploymentConfig of the same name (docs/adopt.md): its
current ReplicaSet's pods become revision 1, Complete, with the same UIDs; no pod is
restarted or deleted, and no deployer runs. The Deployment and its ReplicaSets are deleted
with propagationPolicy Orphan. What cannot be carried over is printed as a warning.

It refuses, changing nothing, a Deployment that is mid-rollout, one that an HPA scales, a
name that a DeploymentConfig already has, and a user who lacks a permission the steps need.
An adoption that was interrupted is finished by running the same command again.

A StatefulSet stays (docs/statefulsets.md): the DeploymentConfig becomes its controller,
and revision 1 records the template its pods run. Its pods and claims are not touched.`,
		Example: `  kubectl stagehand adopt deployment/web --dry-run=client -o yaml
  kubectl stagehand adopt deployment/web
  kubectl stagehand adopt statefulset/db`,
	}
	o.addFlags(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long each step may wait")
	cmd.Flags().BoolVar(&retargetHPA, "retarget-hpa", false, "point the Deployment's HorizontalPodAutoscalers at the DeploymentConfig's scale subresource (without it, an HPA is a refusal)")
	cmd.Flags().BoolVar(&keepHistory, "keep-history", false, "keep the Deployment's older ReplicaSets (at 0 pods), which are deleted by default")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.validate(); err != nil {
			return err
		}
		if len(args) != 1 {
			return usagef("adopt takes one Deployment or StatefulSet (deployment/NAME, statefulset/NAME), got %d arguments", len(args))
		}
		kind, name, found := strings.Cut(args[0], "/")
		stateful := kind == "statefulset" || kind == "statefulsets" || kind == "sts"
		if !found || (!stateful && kind != "deployment" && kind != "deployments" && kind != "deploy") || name == "" {
			return usagef("%q is not a Deployment or a StatefulSet: give deployment/NAME or statefulset/NAME", args[0])
		}
		c, err := newClient(flags)
		if err != nil {
			return err
		}
		a := &adopt.Adopter{Kube: c.Kube, Stagehand: c.Stagehand, Namespace: c.Namespace, Poll: 200 * time.Millisecond, Timeout: timeout, KeepHistory: keepHistory, RetargetHPA: retargetHPA,
			Progress: func(format string, args ...any) { fmt.Fprintf(streams.ErrOut, format+"\n", args...) }}
		ctx := cmd.Context()
		plan, run, what := a.Plan, a.Adopt, "deployment/"+name
		if stateful {
			plan, run, what = a.PlanStatefulSet, a.AdoptStatefulSet, "statefulset/"+name
		}
		dc, warnings, err := plan(ctx, name)
		var refused *adopt.Refused
		if errors.As(err, &refused) {
			if existing, getErr := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Get(ctx, name, metav1.GetOptions{}); getErr == nil && o.dryRun == "none" &&
				existing.Annotations[v1alpha1.AdoptAnnotation] != "" {
				fmt.Fprintf(streams.ErrOut, "deploymentconfig/%s: an adoption was interrupted; finishing it\n", name)
				_, err = run(ctx, name, nil)
				return reportAdopted(streams, what, name, err)
			}
		}
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(streams.ErrOut, "Warning: %s\n", w)
		}
		switch o.dryRun {
		case "client":
			return printDC(streams.Out, outputOr(o.output), dc)
		case "server":
			created, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Create(ctx, dc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			return printDC(streams.Out, outputOr(o.output), created)
		}
		_, err = run(ctx, name, dc)
		return reportAdopted(streams, what, name, err)
	}
	return cmd
}

func reportAdopted(streams genericiooptions.IOStreams, what, name string, err error) error {
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "%s adopted: deploymentconfig/%s runs its pods as revision 1\n", what, name)
	return nil
}

func outputOr(output string) string {
	if output == "" {
		return "yaml"
	}
	return output
}
