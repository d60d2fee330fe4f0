package main

import (
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
)

// completeDCThen completes the first argument with the DeploymentConfigs of the namespace
// (NAME, or dc/NAME once "dc/" is typed), and the later ones with rest, given the
// DeploymentConfig named by the first argument.
func completeDCThen(clients clientFunc, rest func(dc *v1alpha1.DeploymentConfig, toComplete string) ([]string, cobra.ShellCompDirective)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return completeDCNames(cmd, clients, toComplete)
		}
		if rest == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dc := completionDC(cmd, clients, args[0])
		if dc == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return rest(dc, toComplete)
	}
}

func completeDCNames(cmd *cobra.Command, clients clientFunc, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, err := clients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	list, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	prefix := ""
	if kind, _, ok := strings.Cut(toComplete, "/"); ok {
		prefix = kind + "/"
	}
	var out []string
	for _, dc := range list.Items {
		if s := prefix + dc.Name; strings.HasPrefix(s, toComplete) {
			out = append(out, s)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionDC reads the DeploymentConfig named by arg, or nil.
func completionDC(cmd *cobra.Command, clients clientFunc, arg string) *v1alpha1.DeploymentConfig {
	name, err := parseRef(arg)
	if err != nil {
		return nil
	}
	c, err := clients()
	if err != nil {
		return nil
	}
	dc, err := getDC(cmd.Context(), c, name)
	if err != nil {
		return nil
	}
	return dc
}

// containerCompletions completes container names followed by suffix ("=" for
// CONTAINER=IMAGE, with no space after it).
func containerCompletions(suffix string) func(*v1alpha1.DeploymentConfig, string) ([]string, cobra.ShellCompDirective) {
	return func(dc *v1alpha1.DeploymentConfig, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, n := range dcedit.Names(&dc.Spec.Template.Spec) {
			if s := n + suffix; strings.HasPrefix(s, toComplete) {
				out = append(out, s)
			}
		}
		d := cobra.ShellCompDirectiveNoFileComp
		if suffix != "" {
			d |= cobra.ShellCompDirectiveNoSpace
		}
		return out, d
	}
}

// registerContainerFlagCompletion completes -c with the containers of the first argument's
// DeploymentConfig.
func registerContainerFlagCompletion(cmd *cobra.Command, clients clientFunc) {
	_ = cmd.RegisterFlagCompletionFunc("container", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dc := completionDC(cmd, clients, args[0])
		if dc == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return containerCompletions("")(dc, toComplete)
	})
}
