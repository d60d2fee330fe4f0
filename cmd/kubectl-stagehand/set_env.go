package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// setEnvOptions are the flags of `set env`.
type setEnvOptions struct {
	writeOptions
	container string
	hook      string
	from      string
	prefix    string
	list      bool
}

func newSetEnvCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var o setEnvOptions
	cmd := &cobra.Command{
		Use:   "env dc/NAME KEY=VALUE ... | KEY- ... | --from=configmap/NAME|secret/NAME | --list",
		Short: "Set, remove or list environment variables of the containers or of a hook",
		Long: `Set (KEY=VALUE) or remove (KEY-) environment variables of the pod template's containers
and init containers (all of them, or those -c names; -c takes a glob such as 'app*').
--from=configmap/NAME or --from=secret/NAME adds one variable per key of that object, each a
reference (configMapKeyRef or secretKeyRef), named as kubectl names them: every character
other than a letter, a digit or '_' becomes '_', upper-cased, after --prefix.
--list prints the environment instead.

With --hook pre|mid|post, the environment is that of the strategy's execNewPod hook at that
stage instead of the containers'.`,
		Example: `  kubectl stagehand set env dc/hello GREETING=hi DEBUG-
  kubectl stagehand set env dc/hello --from=configmap/settings --prefix=APP_
  kubectl stagehand set env dc/hello --list
  kubectl stagehand set env dc/hello --hook pre MIGRATE_DRY_RUN=true`,
		ValidArgsFunction: completeDCThen(clients, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("set env takes a DeploymentConfig (NAME or dc/NAME)")
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			envChange, stage, err := o.parse(args[1:])
			if err != nil {
				return err
			}
			c, err := clients()
			if err != nil {
				return err
			}
			if o.list {
				return o.printList(cmd.Context(), c, streams, name, stage)
			}
			from, err := o.fromRefs(cmd.Context(), c)
			if err != nil {
				return err
			}
			envChange.Set = append(from, envChange.Set...)
			return o.write(cmd.Context(), c, streams, name, "env", func(dc *v1alpha1.DeploymentConfig) (string, []string, error) {
				return "", nil, o.apply(dc, stage, envChange)
			})
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.container, "container", "c", "*", "the containers to change (a glob; default every container)")
	cmd.Flags().StringVar(&o.hook, "hook", "", "change the environment of the strategy's execNewPod hook at pre, mid or post instead")
	cmd.Flags().StringVar(&o.from, "from", "", "add a reference to every key of configmap/NAME or secret/NAME")
	cmd.Flags().StringVar(&o.prefix, "prefix", "", "with --from, put this before every variable name")
	cmd.Flags().BoolVar(&o.list, "list", false, "print the environment and change nothing")
	registerContainerFlagCompletion(cmd, clients)
	_ = cmd.RegisterFlagCompletionFunc("hook", cobra.FixedCompletions([]string{"pre", "mid", "post"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parse checks the flags and reads the KEY=VALUE and KEY- arguments.
func (o *setEnvOptions) parse(args []string) (dcedit.EnvChange, dcedit.Stage, error) {
	var stage dcedit.Stage
	if err := o.validate(); err != nil {
		return dcedit.EnvChange{}, "", err
	}
	if o.hook != "" {
		s, err := dcedit.ParseStage(o.hook)
		if err != nil {
			return dcedit.EnvChange{}, "", usagef("--hook: %v", err)
		}
		if o.container != "*" {
			return dcedit.EnvChange{}, "", usagef("--hook and -c exclude each other: a hook has one environment")
		}
		stage = s
	}
	if o.prefix != "" && o.from == "" {
		return dcedit.EnvChange{}, "", usagef("--prefix goes with --from")
	}
	envChange, err := dcedit.ParseEnvArgs(args)
	if err != nil {
		return dcedit.EnvChange{}, "", usagef("%v", err)
	}
	if o.list {
		if !envChange.Empty() || o.from != "" {
			return dcedit.EnvChange{}, "", usagef("--list changes nothing: leave out KEY=VALUE, KEY- and --from")
		}
		return envChange, stage, nil
	}
	if envChange.Empty() && o.from == "" {
		return dcedit.EnvChange{}, "", usagef("give KEY=VALUE, KEY-, --from or --list")
	}
	if o.from != "" {
		kind, _, _ := strings.Cut(o.from, "/")
		if _, n, ok := strings.Cut(o.from, "/"); !ok || n == "" || (kind != "configmap" && kind != "cm" && kind != "secret") {
			return dcedit.EnvChange{}, "", usagef("--from %q: use configmap/NAME or secret/NAME", o.from)
		}
	}
	return envChange, stage, nil
}

// fromRefs reads the object of --from and returns a reference per key.
func (o *setEnvOptions) fromRefs(ctx context.Context, c *rollout.Client) ([]corev1.EnvVar, error) {
	if o.from == "" {
		return nil, nil
	}
	kind, name, _ := strings.Cut(o.from, "/")
	if kind == "secret" {
		s, err := c.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading --from %s: %w", o.from, err)
		}
		return dcedit.FromSecret(s, o.prefix), nil
	}
	cm, err := c.Kube.CoreV1().ConfigMaps(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading --from %s: %w", o.from, err)
	}
	return dcedit.FromConfigMap(cm, o.prefix), nil
}

// apply makes the change in the hook's environment or in the selected containers'.
func (o *setEnvOptions) apply(dc *v1alpha1.DeploymentConfig, stage dcedit.Stage, envChange dcedit.EnvChange) error {
	if stage != "" {
		h, err := dcedit.ExecNewPodHook(&dc.Spec.Strategy, stage)
		if err != nil {
			return fmt.Errorf("deploymentconfig/%s: %w", dc.Name, err)
		}
		h.Env = envChange.Apply(h.Env)
		return nil
	}
	containers, err := dcedit.Select(&dc.Spec.Template.Spec, o.container)
	if err != nil {
		return fmt.Errorf("deploymentconfig/%s: %w", dc.Name, err)
	}
	for _, ct := range containers {
		ct.Env = envChange.Apply(ct.Env)
	}
	return nil
}

func (o *setEnvOptions) printList(ctx context.Context, c *rollout.Client, streams genericiooptions.IOStreams, name string, stage dcedit.Stage) error {
	dc, err := getDC(ctx, c, name)
	if err != nil {
		return err
	}
	if stage != "" {
		h, err := dcedit.ExecNewPodHook(&dc.Spec.Strategy, stage)
		if err != nil {
			return fmt.Errorf("deploymentconfig/%s: %w", name, err)
		}
		dcedit.PrintEnv(streams.Out, fmt.Sprintf("%s hook (execNewPod, from container %s)", stage, h.ContainerName), h.Env, nil)
		return nil
	}
	containers, err := dcedit.Select(&dc.Spec.Template.Spec, o.container)
	if err != nil {
		return fmt.Errorf("deploymentconfig/%s: %w", name, err)
	}
	inits := map[*corev1.Container]bool{}
	for i := range dc.Spec.Template.Spec.InitContainers {
		inits[&dc.Spec.Template.Spec.InitContainers[i]] = true
	}
	for _, ct := range containers {
		header := "container " + ct.Name
		if inits[ct] {
			header = "init container " + ct.Name
		}
		dcedit.PrintEnv(streams.Out, header, ct.Env, ct.EnvFrom)
	}
	return nil
}
