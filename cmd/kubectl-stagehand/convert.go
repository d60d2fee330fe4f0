package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-dev/stagehand/internal/openshift"
)

func newConvertCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var file, output string
	var params []string
	var opts openshift.Options
	cmd := &cobra.Command{
		Use:   "convert -f openshift-dc.yaml [-p NAME=VALUE...]",
		Short: "Convert OpenShift apps.openshift.io/v1 DeploymentConfigs into Stagehand ones",
		Long: `Convert OpenShift DeploymentConfigs (apps.openshift.io/v1) into Stagehand DeploymentConfigs
(stagehand.dev/v1alpha1). The input may hold one document, several (---), or Lists. The
result goes to stdout; every field that could not be carried over, and every change that
needs your attention, is reported on stderr. Other kinds in the input are left out.

The DeploymentConfigs in an OpenShift Template (template.openshift.io/v1) are converted
too, with its parameters substituted as oc process does: a value given with --param, else
the parameter's own value. A DeploymentConfig that names a parameter without either (a
required or generated one, say) is refused, naming the parameter and the field: pass the
value with --param, or run oc process first.

  kubectl stagehand convert -f app.yaml --registry registry.example.com | kubectl apply -f -
  kubectl stagehand convert -f template.yaml -p IMAGE_TAG=v2 | kubectl apply -f -
  oc process -f template.yaml -p IMAGE_TAG=v2 | kubectl stagehand convert -f -`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if file == "" {
				return usagef("give the file to convert with -f FILE (or -f - for stdin)")
			}
			if output == "" {
				output = "yaml"
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			for _, p := range params {
				name, value, ok := strings.Cut(p, "=")
				if !ok || name == "" {
					return usagef("--param takes NAME=VALUE (as oc process -p), got %q", p)
				}
				if opts.Params == nil {
					opts.Params = map[string]string{}
				}
				opts.Params[name] = value
			}
			data, err := readInput(file, streams.In)
			if err != nil {
				return err
			}
			res, err := openshift.Convert(data, opts)
			if err != nil {
				return fmt.Errorf("converting %s: %w", file, err)
			}
			for _, n := range res.Notes {
				fmt.Fprintln(streams.ErrOut, n.String())
			}
			return writeConfigs(streams.Out, output, res)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the file with the OpenShift DeploymentConfigs, or - for stdin")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (documents separated by ---) or json (a List)")
	cmd.Flags().StringVar(&opts.Registry, "registry", "", "registry (host[/path]) that holds the images of ImageStreamTag triggers")
	cmd.Flags().StringArrayVarP(&params, "param", "p", nil, "NAME=VALUE: the value of a Template parameter, as oc process -p (repeatable)")
	cmd.Flags().StringVar(&opts.DeployerImage, "deployer-image", "stagehand/deployer:latest", "image that replaces OpenShift's deployer image in custom strategies")
	return cmd
}

func readInput(file string, stdin io.Reader) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return data, nil
}

func writeConfigs(out io.Writer, output string, res *openshift.Result) error {
	if output == "json" {
		items := make([]any, 0, len(res.Configs))
		for _, dc := range res.Configs {
			items = append(items, dc)
		}
		return printData(out, "json", map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	var buf bytes.Buffer
	for i, dc := range res.Configs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		raw, err := yaml.Marshal(dc)
		if err != nil {
			return err
		}
		buf.Write(raw)
	}
	_, err := out.Write(buf.Bytes())
	return err
}
