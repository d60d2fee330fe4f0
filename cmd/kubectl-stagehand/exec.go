package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func newExecCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec SUBCOMMAND",
		Short: "Run a HookAction's command inside running containers (an ExecutionHook), and show how it went",
	}
	cmd.AddCommand(newExecRunCommand(flags, streams), newExecStatusCommand(flags, streams))
	return cmd
}

// execRunOptions are the flags of `exec run`.
type execRunOptions struct {
	selector    string
	pods        []string
	containers  []string
	name        string
	parallelism int32
	wait        bool
	timeout     time.Duration
}

func newExecRunCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var o execRunOptions
	cmd := &cobra.Command{
		Use:   "run ACTION (-l SELECTOR | --pod NAME...) [-c CONTAINER...] [--wait]",
		Short: "Create an ExecutionHook that runs the HookAction ACTION in the selected containers",
		Long: `Create an ExecutionHook that runs the HookAction ACTION in every selected container at once.
Select pods with -l (a label selector) or with --pod (one or more names); -c names the
containers (default: every container of each pod). With --wait, follow the hook until it
finishes, print its outcome per container, and exit 1 if it failed.`,
		Example: `  kubectl stagehand exec run flush-cache -l app=web -c cache --wait
  kubectl stagehand exec run quiesce --pod db-0 --pod db-1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("exec run takes one HookAction name, got %d arguments", len(args))
			}
			if (o.selector == "") == (len(o.pods) == 0) {
				return usagef("exec run needs exactly one of -l SELECTOR and --pod NAME")
			}
			c, err := newClient(flags)
			if err != nil {
				return err
			}
			hook, err := o.hook(args[0])
			if err != nil {
				return err
			}
			created, err := c.Stagehand.StagehandV1alpha1().ExecutionHooks(c.Namespace).Create(cmd.Context(), hook, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "executionhook/%s created\n", created.Name)
			if !o.wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			var last *v1alpha1.ExecutionHook
			err = c.WaitExecutionHook(ctx, created.Name, func(h *v1alpha1.ExecutionHook) bool {
				last = h
				return h == nil || hookFinished(h)
			})
			if err != nil {
				return fmt.Errorf("waiting for executionhook/%s: %w", created.Name, err)
			}
			if last == nil {
				return fmt.Errorf("executionhook/%s was deleted before it finished", created.Name)
			}
			printHookStatus(streams.Out, last)
			if last.Status.Phase != v1alpha1.ExecutionHookComplete {
				return errors.New(hookFailure(last))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector of the pods")
	cmd.Flags().StringArrayVar(&o.pods, "pod", nil, "a pod by name (repeat for more)")
	cmd.Flags().StringArrayVarP(&o.containers, "container", "c", nil, "a container to run in (repeat for more; default every container)")
	cmd.Flags().StringVar(&o.name, "name", "", "the ExecutionHook's name (default: ACTION- and a random suffix)")
	cmd.Flags().Int32Var(&o.parallelism, "parallelism", 0, "at most this many containers at once (default: all)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "follow the hook until it finishes; exit 1 if it failed")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Hour, "how long --wait waits")
	return cmd
}

// hook builds the ExecutionHook of the flags.
func (o execRunOptions) hook(action string) (*v1alpha1.ExecutionHook, error) {
	h := &v1alpha1.ExecutionHook{Spec: v1alpha1.ExecutionHookSpec{ActionName: action}}
	if o.name != "" {
		h.Name = o.name
	} else {
		h.GenerateName = action + "-"
	}
	if o.parallelism < 0 {
		return nil, usagef("--parallelism must be at least 1")
	}
	if o.parallelism > 0 {
		h.Spec.Parallelism = &o.parallelism
	}
	if o.selector != "" {
		sel, err := metav1.ParseToLabelSelector(o.selector)
		if err != nil {
			return nil, usagef("-l %q: %v", o.selector, err)
		}
		h.Spec.PodSelection.PodContainerSelector = &v1alpha1.PodContainerSelector{PodSelector: sel, ContainerList: o.containers}
		return h, nil
	}
	for _, p := range o.pods {
		h.Spec.PodSelection.PodContainerNamesList = append(h.Spec.PodSelection.PodContainerNamesList,
			v1alpha1.PodContainerNames{PodName: p, ContainerNames: o.containers})
	}
	return h, nil
}

func newExecStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status HOOK",
		Short: "Show an ExecutionHook's outcome: one row per pod and container",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("exec status takes one ExecutionHook name, got %d arguments", len(args))
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			name := strings.TrimPrefix(strings.TrimPrefix(args[0], "executionhook/"), "eh/")
			c, err := newClient(flags)
			if err != nil {
				return err
			}
			h, err := c.Stagehand.StagehandV1alpha1().ExecutionHooks(c.Namespace).Get(cmd.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if output != "" {
				h.ManagedFields = nil
				return printData(streams.Out, output, h)
			}
			printHookStatus(streams.Out, h)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")
	return cmd
}

func hookFinished(h *v1alpha1.ExecutionHook) bool {
	return h.Status.Phase.IsTerminal()
}

// hookFailure says why a hook failed, in one line.
func hookFailure(h *v1alpha1.ExecutionHook) string {
	if h.Status.Error != nil {
		return fmt.Sprintf("executionhook/%s failed: %s: %s", h.Name, h.Status.Error.ErrorType, h.Status.Error.Message)
	}
	for _, c := range h.Status.Conditions {
		if c.Type == v1alpha1.ExecutionHookConditionFailed && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("executionhook/%s failed: %s", h.Name, c.Message)
		}
	}
	return fmt.Sprintf("executionhook/%s ended %s", h.Name, h.Status.Phase)
}

// printHookStatus writes the hook's phase and a row per pod × container: attempts, the
// result, the error type and the output's last line.
func printHookStatus(out io.Writer, h *v1alpha1.ExecutionHook) {
	fmt.Fprintf(out, "executionhook/%s: %s, %s succeeded (action %s)\n", h.Name, orDash(string(h.Status.Phase)), orDash(h.Status.Summary), h.Spec.ActionName)
	if h.Status.Error != nil {
		fmt.Fprintf(out, "error: %s: %s\n", h.Status.Error.ErrorType, h.Status.Error.Message)
	}
	if len(h.Status.HookStatuses) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "POD\tCONTAINER\tATTEMPTS\tRESULT\tERROR\tLAST OUTPUT")
	for _, s := range h.Status.HookStatuses {
		result := "Running"
		if s.Succeed != nil && *s.Succeed {
			result = "Succeeded"
		} else if s.Succeed != nil {
			result = "Failed"
		}
		errType := "-"
		if s.Error != nil {
			errType = string(s.Error.ErrorType)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", s.PodName, s.ContainerName, s.Attempts, result, errType, orDash(podstatus.TruncateStart(podstatus.LastLine(s.Output), 80)))
	}
	_ = w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
