package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
)

func newSetResourcesCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var o writeOptions
	var container, limits, requests string
	cmd := &cobra.Command{
		Use:   "resources dc/NAME [-c CONTAINER] --limits=cpu=200m,memory=512Mi --requests=...",
		Short: "Set the resource limits and requests of containers of a DeploymentConfig",
		Long: `Set the resource limits and requests of the pod template's containers and init containers
(all of them, or those -c names; -c takes a glob). Each value is a Kubernetes quantity; the
resources not named keep their values. A request above its limit is refused.`,
		Example:           `  kubectl stagehand set resources dc/hello -c app --limits=cpu=200m,memory=512Mi --requests=cpu=100m`,
		ValidArgsFunction: completeDCThen(clients, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("set resources takes one DeploymentConfig (NAME or dc/NAME), got %d arguments", len(args))
			}
			if err := o.validate(); err != nil {
				return err
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			lim, err := dcedit.ParseResourceList(limits)
			if err != nil {
				return usagef("--limits: %v", err)
			}
			req, err := dcedit.ParseResourceList(requests)
			if err != nil {
				return usagef("--requests: %v", err)
			}
			if len(lim) == 0 && len(req) == 0 {
				return usagef("give --limits or --requests")
			}
			c, err := clients()
			if err != nil {
				return err
			}
			return o.write(cmd.Context(), c, streams, name, "resource requirements", func(dc *v1alpha1.DeploymentConfig) (string, []string, error) {
				containers, err := dcedit.Select(&dc.Spec.Template.Spec, container)
				if err != nil {
					return "", nil, fmt.Errorf("deploymentconfig/%s: %w", name, err)
				}
				var names []string
				for _, ct := range containers {
					if err := dcedit.SetResources(ct, lim, req); err != nil {
						return "", nil, err
					}
					names = append(names, ct.Name)
				}
				return strings.Join(names, ", "), nil, nil
			})
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&container, "container", "c", "*", "the containers to change (a glob; default every container)")
	cmd.Flags().StringVar(&limits, "limits", "", "the limits, such as cpu=200m,memory=512Mi")
	cmd.Flags().StringVar(&requests, "requests", "", "the requests, such as cpu=100m,memory=256Mi")
	registerContainerFlagCompletion(cmd, clients)
	return cmd
}
