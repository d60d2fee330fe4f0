package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/internal/adopt"
)

func newEjectCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var yes, retargetHPA bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "eject dc/NAME [--yes]",
		Short: "Give a DeploymentConfig's running pods to a Deployment of the same name, with no pod restarted",
		Long: `Hand the DeploymentConfig's active revision to a Deployment of the same name (docs/adopt.md):
the Deployment adopts that revision's ReplicaSet and pods as they are, then the
DeploymentConfig and its older revisions go. Hooks, steps, image triggers and custom
strategies have no Deployment equivalent: eject lists what is lost and goes on only with
--yes. It refuses, changing nothing, a DeploymentConfig whose latest revision is not
Complete, one that an HPA scales (unless --retarget-hpa), and a user who lacks a
permission the steps need. Run again after an interruption, it finishes the hand-over.

The DeploymentConfig of a StatefulSet gives that StatefulSet back as it runs, pods and
claims untouched, and deletes its revision records (docs/statefulsets.md).`,
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "go on although the DeploymentConfig has settings a Deployment cannot carry")
	cmd.Flags().BoolVar(&retargetHPA, "retarget-hpa", false, "point the DeploymentConfig's HorizontalPodAutoscalers back at the Deployment (without it, an HPA is a refusal)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long each step may wait")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("eject takes one DeploymentConfig (dc/NAME), got %d arguments", len(args))
		}
		name, err := parseRef(args[0])
		if err != nil {
			return err
		}
		c, err := newClient(flags)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		dc, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		stateful := err == nil && dc.Spec.StatefulSet != nil
		kind := map[bool]string{false: "Deployment", true: "StatefulSet"}[stateful]
		if err == nil {
			if lost := adopt.Lost(dc); len(lost) > 0 {
				fmt.Fprintf(streams.ErrOut, "deploymentconfig/%s has what a %s cannot carry, and which eject drops: %s\n", name, kind, strings.Join(lost, ", "))
				if !yes {
					return errors.New("nothing was changed; run again with --yes to eject anyway")
				}
			}
		}
		a := &adopt.Adopter{Kube: c.Kube, Stagehand: c.Stagehand, Namespace: c.Namespace, Poll: 200 * time.Millisecond, Timeout: timeout, RetargetHPA: retargetHPA,
			Progress: func(format string, args ...any) { fmt.Fprintf(streams.ErrOut, format+"\n", args...) }}
		if err := a.Eject(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "deploymentconfig/%s ejected: %s/%s runs its pods\n", name, strings.ToLower(kind), name)
		return nil
	}
	return cmd
}
