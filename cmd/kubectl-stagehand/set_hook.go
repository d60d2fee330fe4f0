package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/dcedit"
)

// setHookOptions are the flags of `set deployment-hook`.
type setHookOptions struct {
	writeOptions
	pre, mid, post, failed bool
	remove                 bool
	failurePolicy          string
	container              string
	env                    []string
	volumes                []string
	exec                   bool
	pods                   string
	timeout                time.Duration
}

func newSetHookCommand(clients clientFunc, streams genericiooptions.IOStreams) *cobra.Command {
	var o setHookOptions
	cmd := &cobra.Command{
		Use:   "deployment-hook dc/NAME --pre|--mid|--post|--failed [--failure-policy=Abort|Retry|Ignore] [-c CONTAINER] [-e KEY=VALUE]... [-v VOLUME]... -- COMMAND ...",
		Short: "Set or remove the lifecycle hook of a rollout stage (pre, mid, post, failed)",
		Long: `Set the lifecycle hook of a stage of the DeploymentConfig's strategy (recreateParams for
Recreate, rollingParams for Rolling; mid exists only for Recreate). The hook replaces the one
at that stage.

By default it is an execNewPod hook: COMMAND runs in a new pod built from the container -c
(default: the first container), with its image, environment (plus -e) and the volumes -v.
With --exec it is an exec hook instead: COMMAND runs inside the revision's running pods, in
container -c, in the pods --pods (Old in a pre or failed hook, New in a post hook; the
default), each run bounded by --timeout. The failed hook (--failed) runs once when a
revision fails, before the previous revision is scaled back up; it never makes the
revision Complete. --failure-policy is Abort (the default for a new hook: a failure
stops the rollout), Retry or Ignore; an existing hook keeps its policy unless it is given.
--remove takes the stage's hook away.`,
		Example: `  kubectl stagehand set deployment-hook dc/hello --pre --failure-policy=Abort -- /bin/sh -c './migrate'
  kubectl stagehand set deployment-hook dc/hello --post --exec --timeout=1m -- /bin/warm-cache
  kubectl stagehand set deployment-hook dc/hello --failed --failure-policy=Ignore -- /bin/sh -c './migrate down'
  kubectl stagehand set deployment-hook dc/hello --pre --remove`,
		ValidArgsFunction: completeDCThen(clients, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("set deployment-hook takes a DeploymentConfig (NAME or dc/NAME) and, after --, a command")
			}
			if at := cmd.ArgsLenAtDash(); at > 1 {
				return usagef("set deployment-hook takes one DeploymentConfig before --, got %d arguments", at)
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			stage, policy, err := o.parse(args[1:])
			if err != nil {
				return err
			}
			c, err := clients()
			if err != nil {
				return err
			}
			return o.write(cmd.Context(), c, streams, name, "deployment hook", func(dc *v1alpha1.DeploymentConfig) (string, []string, error) {
				if err := o.apply(dc, stage, policy, args[1:]); err != nil {
					return "", nil, fmt.Errorf("deploymentconfig/%s: %w", name, err)
				}
				return string(stage), nil, nil
			})
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&o.pre, "pre", false, "the hook that runs before anything is scaled")
	f.BoolVar(&o.mid, "mid", false, "the hook that runs when the old pods are gone and no new one started (Recreate only)")
	f.BoolVar(&o.post, "post", false, "the hook that runs after every new pod is available")
	f.BoolVar(&o.failed, "failed", false, "the hook that runs once when the revision fails, before the rollback (docs/hooks.md)")
	f.BoolVar(&o.remove, "remove", false, "remove the hook of the stage")
	f.StringVar(&o.failurePolicy, "failure-policy", "", "Abort, Retry or Ignore (default: Abort, or the existing hook's)")
	f.StringVarP(&o.container, "container", "c", "", "the template container the hook runs as (execNewPod) or in (--exec); default the first")
	f.StringArrayVarP(&o.env, "environment", "e", nil, "KEY=VALUE added to the hook pod's environment (repeat for more)")
	f.StringArrayVarP(&o.volumes, "volumes", "v", nil, "a template volume the hook pod mounts (repeat for more)")
	f.BoolVar(&o.exec, "exec", false, "an exec hook: run COMMAND in the revision's running pods instead of a new pod")
	f.StringVar(&o.pods, "pods", "", "with --exec: Old (pre) or New (post), the pods the command runs in")
	f.DurationVar(&o.timeout, "timeout", 0, "with --exec: the bound of each run, 1s to 1h (default 5m)")
	registerContainerFlagCompletion(cmd, clients)
	_ = cmd.RegisterFlagCompletionFunc("failure-policy", cobra.FixedCompletions([]string{"Abort", "Retry", "Ignore"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("pods", cobra.FixedCompletions([]string{"Old", "New", "All"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parse checks the flags against each other and reads the stage and the failure policy.
func (o *setHookOptions) parse(command []string) (dcedit.Stage, v1alpha1.LifecycleHookFailurePolicy, error) {
	if err := o.validate(); err != nil {
		return "", "", err
	}
	var stages []dcedit.Stage
	for s, on := range map[dcedit.Stage]bool{dcedit.Pre: o.pre, dcedit.Mid: o.mid, dcedit.Post: o.post, dcedit.Failed: o.failed} {
		if on {
			stages = append(stages, s)
		}
	}
	if len(stages) != 1 {
		return "", "", usagef("give exactly one of --pre, --mid, --post and --failed")
	}
	stage := stages[0]
	var policy v1alpha1.LifecycleHookFailurePolicy
	if o.failurePolicy != "" {
		i := slices.IndexFunc([]string{"Abort", "Retry", "Ignore"}, func(p string) bool { return strings.EqualFold(p, o.failurePolicy) })
		if i < 0 {
			return "", "", usagef("--failure-policy %q: use Abort, Retry or Ignore", o.failurePolicy)
		}
		policy = []v1alpha1.LifecycleHookFailurePolicy{v1alpha1.LifecycleHookFailurePolicyAbort, v1alpha1.LifecycleHookFailurePolicyRetry, v1alpha1.LifecycleHookFailurePolicyIgnore}[i]
	}
	if o.remove {
		if len(command) > 0 || o.failurePolicy != "" || o.container != "" || len(o.env) > 0 || len(o.volumes) > 0 || o.exec {
			return "", "", usagef("--remove takes only the stage (--pre, --mid, --post or --failed)")
		}
		return stage, policy, nil
	}
	if len(command) == 0 {
		return "", "", usagef("give the hook's command after --, such as: -- /bin/sh -c './migrate'")
	}
	if !o.exec {
		if o.pods != "" || o.timeout != 0 {
			return "", "", usagef("--pods and --timeout go with --exec")
		}
		for _, e := range o.env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				return "", "", usagef("-e %q is not KEY=VALUE", e)
			}
		}
		return stage, policy, nil
	}
	if len(o.env) > 0 || len(o.volumes) > 0 {
		return "", "", usagef("-e and -v go with a new pod, not with --exec: an exec hook runs in the pods as they are")
	}
	if stage == dcedit.Mid {
		return "", "", usagef("an exec hook cannot run at mid: the old pods are gone and the new ones not started; use --pre or --post, or leave out --exec")
	}
	want := map[dcedit.Stage]string{dcedit.Pre: "Old", dcedit.Post: "New", dcedit.Failed: "Old"}[stage]
	if o.pods == "" {
		o.pods = want
	}
	if !strings.EqualFold(o.pods, want) {
		return "", "", usagef("--pods %s is not allowed in a %s hook: it must be %s (%s)", o.pods, stage, want,
			map[dcedit.Stage]string{dcedit.Pre: "the new revision has no pods yet", dcedit.Post: "the old revisions' pods are gone by then",
				dcedit.Failed: "it runs before the old revision serves again"}[stage])
	}
	o.pods = want
	if o.timeout != 0 && (o.timeout < time.Second || o.timeout > time.Hour || o.timeout%time.Second != 0) {
		return "", "", usagef("--timeout %s: give whole seconds from 1s to 1h", o.timeout)
	}
	return stage, policy, nil
}

// apply sets (or removes) the hook of the stage on dc.
func (o *setHookOptions) apply(dc *v1alpha1.DeploymentConfig, stage dcedit.Stage, policy v1alpha1.LifecycleHookFailurePolicy, command []string) error {
	old, err := dcedit.Hook(&dc.Spec.Strategy, stage)
	if err != nil {
		return err
	}
	if o.remove {
		return dcedit.SetHook(&dc.Spec.Strategy, stage, nil)
	}
	spec := &dc.Spec.Template.Spec
	container := o.container
	if container == "" {
		if len(spec.Containers) == 0 {
			return fmt.Errorf("the pod template has no container for the hook")
		}
		container = spec.Containers[0].Name
	}
	if !slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == container }) {
		return &dcedit.UnknownContainerError{Name: container, Available: dcedit.Describe(spec)}
	}
	h := &v1alpha1.LifecycleHook{FailurePolicy: policy}
	if h.FailurePolicy == "" {
		h.FailurePolicy = v1alpha1.LifecycleHookFailurePolicyAbort
		if old != nil {
			h.FailurePolicy = old.FailurePolicy
		}
	}
	if old != nil && h.FailurePolicy == v1alpha1.LifecycleHookFailurePolicyRetry {
		h.Retry = old.Retry
	}
	if o.exec {
		h.Exec = &v1alpha1.ExecHook{ContainerName: container, Command: command, Pods: v1alpha1.ExecHookPods(o.pods)}
		if o.timeout != 0 {
			h.Exec.TimeoutSeconds = ptr.To(int64(o.timeout / time.Second))
		}
		return dcedit.SetHook(&dc.Spec.Strategy, stage, h)
	}
	h.ExecNewPod = &v1alpha1.ExecNewPodHook{ContainerName: container, Command: command}
	for _, e := range o.env {
		k, v, _ := strings.Cut(e, "=")
		h.ExecNewPod.Env = append(h.ExecNewPod.Env, corev1.EnvVar{Name: k, Value: v})
	}
	for _, v := range o.volumes {
		if !slices.ContainsFunc(spec.Volumes, func(tv corev1.Volume) bool { return tv.Name == v }) {
			return fmt.Errorf("the pod template has no volume %q for the hook (-v names volumes of spec.template.spec.volumes)", v)
		}
		h.ExecNewPod.Volumes = append(h.ExecNewPod.Volumes, v)
	}
	return dcedit.SetHook(&dc.Spec.Strategy, stage, h)
}
