package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func newDeferCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "defer SUBCOMMAND",
		Short: "Show the pods whose DeferPolicy steps run, and release a stuck one",
	}
	cmd.AddCommand(newDeferStatusCommand(flags, streams), newDeferReleaseCommand(flags, streams))
	return cmd
}

func newDeferStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "status [POD] [-A] [-o json|yaml]",
		Short: "List the pods in their defer phase; with POD, that pod's run and its step pods",
		Long: `List the pods in their defer phase: a DeferPolicy's steps run for them, or they are
Terminating and wait for the finalizer stagehand.dev/defer. With POD, show that pod whatever
its state, with the outcome of a finished run and its step pods.`,
		Example: `  kubectl stagehand defer status
  kubectl stagehand defer status web-7d9f-x2k4q
  kubectl stagehand defer status -A -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("defer status takes at most one pod name, got %d arguments", len(args))
			}
			if len(args) == 1 && allNamespaces {
				return usagef("defer status POD names a pod of one namespace: leave out -A")
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := newClient(flags)
			if err != nil {
				return err
			}
			d := &deferClient{kube: c.Kube, stagehand: c.Stagehand, now: time.Now}
			pod := ""
			if len(args) == 1 {
				pod = strings.TrimPrefix(args[0], "pod/")
			}
			return d.printStatus(cmd.Context(), streams.Out, c.Namespace, pod, allNamespaces, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
	return cmd
}

// printStatus writes the status of pod, or of every pod in its defer phase in ns (in
// every namespace with all), as a table or as output (json or yaml).
func (d *deferClient) printStatus(ctx context.Context, out io.Writer, ns, pod string, all bool, output string) error {
	if pod != "" {
		st, err := d.podStatus(ctx, ns, pod)
		if err != nil {
			return err
		}
		if output != "" {
			return printData(out, output, st)
		}
		printDeferPod(out, st)
		return nil
	}
	where := "in namespace " + ns
	if all {
		ns, where = metav1.NamespaceAll, "in any namespace"
	}
	rows, err := d.inDeferPhase(ctx, ns)
	if err != nil {
		return err
	}
	switch {
	case output != "":
		return printData(out, output, rows)
	case len(rows) == 0:
		fmt.Fprintf(out, "No pods are in a defer phase %s.\n", where)
	default:
		printDeferTable(out, rows, all)
	}
	return nil
}

// deferClient reads and releases pods' defer runs.
type deferClient struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	now       func() time.Time
	// policies caches the policies read for the step names, by namespace/name; nil when
	// unreadable.
	policies map[string]*v1alpha1.DeferPolicy
}

// deferStatus is one pod's defer phase, as the table shows it and -o prints it.
type deferStatus struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Policy    string `json:"policy,omitempty"`
	When      string `json:"when,omitempty"`
	Progress  string `json:"progress,omitempty"`
	// Step is the name of the step that runs or runs next.
	Step        string       `json:"step,omitempty"`
	State       string       `json:"state"`
	Deadline    *metav1.Time `json:"deadline,omitempty"`
	Terminating bool         `json:"terminating"`
	Finalizer   bool         `json:"finalizer"`
	// Run is the record of the pod's defer-run annotation.
	Run *v1alpha1.DeferRun `json:"run,omitempty"`
	// RunError says why the record could not be read.
	RunError string         `json:"runError,omitempty"`
	StepPods []deferStepPod `json:"stepPods,omitempty"`
	deadline string         // the DEADLINE column
	policy   *v1alpha1.DeferPolicy
}

// deferStepPod is one pod a step ran in.
type deferStepPod struct {
	Name     string `json:"name"`
	Step     string `json:"step"`
	Phase    string `json:"phase"`
	ExitCode *int32 `json:"exitCode,omitempty"`
}

// inDeferPhase lists the pods of ns (every namespace when "") in their defer phase: a run
// without an outcome yet, or Terminating with the finalizer.
func (d *deferClient) inDeferPhase(ctx context.Context, ns string) ([]*deferStatus, error) {
	list, err := d.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	rows := []*deferStatus{}
	for i := range list.Items {
		pod := &list.Items[i]
		if _, isStep := pod.Labels[v1alpha1.DeferStepOfLabel]; isStep {
			continue
		}
		run, _ := v1alpha1.DeferRunOf(pod)
		waiting := pod.DeletionTimestamp != nil && v1alpha1.HasDeferFinalizer(pod)
		if waiting || (run != nil && !run.Done()) {
			rows = append(rows, d.statusOf(ctx, pod))
		}
	}
	slices.SortFunc(rows, func(a, b *deferStatus) int {
		return strings.Compare(a.Namespace+"/"+a.Pod, b.Namespace+"/"+b.Pod)
	})
	return rows, nil
}

// podStatus is one pod's defer phase, whatever its state, with its step pods.
func (d *deferClient) podStatus(ctx context.Context, ns, name string) (*deferStatus, error) {
	pod, err := d.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, err
	}
	st := d.statusOf(ctx, pod)
	steps, err := d.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.DeferStepOfLabel + "=" + string(pod.UID)})
	if err != nil {
		return nil, fmt.Errorf("listing the step pods of pod %s: %w", name, err)
	}
	slices.SortFunc(steps.Items, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, sp := range steps.Items {
		st.StepPods = append(st.StepPods, stepPodOf(&sp, st.policy))
	}
	return st, nil
}

// statusOf reads pod's run and names its current step from the policy, if readable.
func (d *deferClient) statusOf(ctx context.Context, pod *corev1.Pod) *deferStatus {
	st := &deferStatus{
		Namespace: pod.Namespace, Pod: pod.Name,
		Progress:    pod.Annotations[v1alpha1.DeferProgressAnnotation],
		Terminating: pod.DeletionTimestamp != nil,
		Finalizer:   v1alpha1.HasDeferFinalizer(pod),
		deadline:    "-",
	}
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil {
		st.RunError = err.Error()
	}
	st.Run = run
	if run != nil {
		st.Policy, st.When = run.Policy, string(run.When)
		if run.Policy != "" {
			st.policy = d.policy(ctx, pod.Namespace, run.Policy)
		}
		if p := st.policy; p != nil && run.Current < len(p.Spec.Steps) && !run.Done() {
			st.Step = p.Spec.Steps[run.Current].Name
		}
		if run.Deadline != nil && !run.Done() {
			st.Deadline = run.Deadline
			st.deadline = "passed"
			if left := run.Deadline.Sub(d.now()); left > 0 {
				st.deadline = "in " + duration.HumanDuration(left)
			}
		}
	}
	st.State = deferState(st, run, d.now())
	return st
}

// policy is the named policy, or nil when it cannot be read (gone, or not allowed).
func (d *deferClient) policy(ctx context.Context, ns, name string) *v1alpha1.DeferPolicy {
	key := ns + "/" + name
	if p, ok := d.policies[key]; ok {
		return p
	}
	if d.policies == nil {
		d.policies = map[string]*v1alpha1.DeferPolicy{}
	}
	p, err := d.stagehand.StagehandV1alpha1().DeferPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		p = nil
	}
	d.policies[key] = p
	return p
}

// deferState is the STATE column: where the run is, in the controller's terms
// (controller/deferpolicy advance).
func deferState(st *deferStatus, run *v1alpha1.DeferRun, now time.Time) string {
	switch {
	case st.RunError != "":
		return "Unreadable defer-run annotation"
	case run == nil && st.Terminating && st.Finalizer:
		return "Waiting for the controller"
	case run == nil && st.Finalizer:
		return "Not deleted (the steps run when it is)"
	case run == nil:
		return "No defer run"
	case run.Done():
		return string(run.Outcome)
	case run.Started == nil:
		return "Waiting for containers to stop"
	case run.Current >= run.Steps:
		return "Finishing"
	case run.NotBefore != nil && now.Before(run.NotBefore.Time):
		return "Back-off until " + run.NotBefore.Local().Format(time.TimeOnly)
	case run.Attempt == 0:
		return fmt.Sprintf("Starting step %d", run.Current+1)
	}
	return fmt.Sprintf("Running step %d attempt %d", run.Current+1, run.Attempt)
}

// stepPodOf describes a step's pod: its step (index and, with the policy, name), phase
// and exit code.
func stepPodOf(sp *corev1.Pod, policy *v1alpha1.DeferPolicy) deferStepPod {
	out := deferStepPod{Name: sp.Name, Step: orDash(sp.Labels[v1alpha1.DeferStepLabel]), Phase: string(sp.Status.Phase)}
	if i, err := strconv.Atoi(out.Step); err == nil && policy != nil && i >= 1 && i <= len(policy.Spec.Steps) &&
		sp.Labels[v1alpha1.DeferPolicyLabel] == policy.Name {
		out.Step = fmt.Sprintf("%d (%s)", i, policy.Spec.Steps[i-1].Name)
	}
	if sp.DeletionTimestamp != nil {
		out.Phase += " (stopping)"
	}
	for _, s := range sp.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			code := t.ExitCode
			out.ExitCode = &code
		}
	}
	return out
}

// printDeferTable writes one row per pod.
func printDeferTable(out io.Writer, rows []*deferStatus, withNamespace bool) {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "POD\tPOLICY\tWHEN\tPROGRESS\tSTEP\tSTATE\tDEADLINE"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(w, header)
	for _, r := range rows {
		if withNamespace {
			fmt.Fprintf(w, "%s\t", r.Namespace)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Pod, orDash(r.Policy), orDash(r.When), orDash(r.Progress),
			orDash(r.Step), r.State, r.deadline)
	}
	_ = w.Flush()
}

// printDeferPod writes one pod's row, the outcome of a finished run, and its step pods.
func printDeferPod(out io.Writer, st *deferStatus) {
	printDeferTable(out, []*deferStatus{st}, false)
	if st.RunError != "" {
		fmt.Fprintf(out, "error: %s\n", st.RunError)
	}
	if run := st.Run; run != nil && run.Done() {
		msg := run.Message
		if len(run.Failed) > 0 && !strings.Contains(msg, run.Failed[0]) {
			msg += " (failed steps: " + strings.Join(run.Failed, ", ") + ")"
		}
		fmt.Fprintf(out, "Outcome: %s: %s\n", run.Outcome, orDash(msg))
	}
	if len(st.StepPods) == 0 {
		return
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "STEP POD\tSTEP\tPHASE\tEXIT CODE")
	for _, sp := range st.StepPods {
		code := "-"
		if sp.ExitCode != nil {
			code = strconv.Itoa(int(*sp.ExitCode))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", sp.Name, sp.Step, sp.Phase, code)
	}
	_ = w.Flush()
}
