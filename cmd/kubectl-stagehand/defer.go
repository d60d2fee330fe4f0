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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

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

func newDeferReleaseCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "release POD [--reason TEXT]",
		Short: "Remove the finalizer stagehand.dev/defer from a pod on purpose, and stop its running steps",
		Long: `Remove the finalizer stagehand.dev/defer from POD without waiting for its DeferPolicy's
steps: in an emergency (a step that hangs, a controller that is down), or to uninstall
Stagehand. The step pods that still run for it are stopped, the remaining steps do not
run, and a Warning event DeferReleased with the reason is recorded on the pod.`,
		Example: `  kubectl stagehand defer release web-7d9f-x2k4q --reason "backup step hangs, INC-4711"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("defer release takes one pod name, got %d arguments", len(args))
			}
			c, err := newClient(flags)
			if err != nil {
				return err
			}
			d := &deferClient{kube: c.Kube, stagehand: c.Stagehand, now: time.Now}
			name := strings.TrimPrefix(args[0], "pod/")
			res, err := d.release(cmd.Context(), c.Namespace, name, reason)
			if res != nil {
				res.print(streams)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the pod is released, recorded in the event")
	return cmd
}

// releaseResult is what release did.
type releaseResult struct {
	pod string
	// released is false when the pod did not carry the finalizer, or went away first.
	released, gone bool
	// terminating is whether the pod was being deleted.
	terminating bool
	stopped     []string
	// eventErr is why the event could not be recorded.
	eventErr error
}

func (r *releaseResult) print(streams genericiooptions.IOStreams) {
	if r.gone {
		fmt.Fprintf(streams.Out, "pod/%s went away before its finalizer was removed: nothing to release\n", r.pod)
		return
	}
	if !r.released {
		fmt.Fprintf(streams.Out, "pod/%s does not carry the finalizer %s: nothing to release\n", r.pod, v1alpha1.DeferFinalizer)
		return
	}
	fmt.Fprintf(streams.Out, "pod/%s released: finalizer %s removed, %s stopped\n", r.pod, v1alpha1.DeferFinalizer, runningSteps(len(r.stopped)))
	if !r.terminating {
		fmt.Fprintf(streams.ErrOut, "note: pod/%s is not being deleted; it stays without the finalizer (annotation %s), so its AfterTermination steps will not run when it is deleted\n", r.pod, v1alpha1.DeferReleasedAnnotation)
	}
	if r.eventErr != nil {
		fmt.Fprintf(streams.ErrOut, "warning: the event %s could not be recorded on pod/%s: %v\n", v1alpha1.EventDeferReleased, r.pod, r.eventErr)
	}
}

func runningSteps(n int) string {
	if n == 1 {
		return "1 running step"
	}
	return fmt.Sprintf("%d running steps", n)
}

// release removes the finalizer from pod ns/name, stops its running step pods, and records
// the event DeferReleased. A pod without the finalizer is left alone.
//
// The finalizer goes first: it is what the user needs, and once it is gone the controller
// no longer starts steps for the pod (it only acts on a deleted pod that carries it).
// The steps that still run are stopped next, as the controller's own stopSteps does.
func (d *deferClient) release(ctx context.Context, ns, name, reason string) (*releaseResult, error) {
	pods := d.kube.CoreV1().Pods(ns)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, err
	}
	res := &releaseResult{pod: name}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if pod == nil {
			if pod, err = pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if !v1alpha1.HasDeferFinalizer(pod) {
			return nil
		}
		cp := pod.DeepCopy()
		cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == v1alpha1.DeferFinalizer })
		if cp.DeletionTimestamp == nil {
			// The controller does not add the finalizer back to a running pod
			// released so.
			if cp.Annotations == nil {
				cp.Annotations = map[string]string{}
			}
			cp.Annotations[v1alpha1.DeferReleasedAnnotation] = d.now().UTC().Format(time.RFC3339)
		}
		pod = nil // a conflict reads it again
		updated, err := pods.Update(ctx, cp, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		pod, res.released = updated, true
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		res.gone = true // someone else released it in between
		return res, nil
	case err != nil:
		return nil, fmt.Errorf("removing the finalizer %s from pod %s: %w", v1alpha1.DeferFinalizer, name, err)
	case !res.released:
		return res, nil
	}
	res.terminating = pod.DeletionTimestamp != nil
	stopped, stopErr := d.stopSteps(ctx, pod)
	res.stopped = stopped
	res.eventErr = d.recordReleased(ctx, pod, reason, stopped)
	if stopErr != nil {
		return res, fmt.Errorf("the finalizer is removed, but %w; delete it with kubectl delete pod", stopErr)
	}
	return res, nil
}

// stopSteps deletes the step pods of pod that still run, and names them.
func (d *deferClient) stopSteps(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	list, err := d.kube.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.DeferStepOfLabel + "=" + string(pod.UID)})
	if err != nil {
		return nil, fmt.Errorf("listing its step pods: %w", err)
	}
	var stopped []string
	for _, sp := range list.Items {
		if sp.Status.Phase == corev1.PodSucceeded || sp.Status.Phase == corev1.PodFailed || sp.DeletionTimestamp != nil {
			continue
		}
		// One second, as the controller gives a step it stops: the run is over and a
		// step that ignores SIGTERM (a shell as PID 1) must not hold the node's volume.
		err := d.kube.CoreV1().Pods(sp.Namespace).Delete(ctx, sp.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](1),
			Preconditions:      &metav1.Preconditions{UID: &sp.UID},
		})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue // gone already, or a new pod of that name
		case err != nil:
			return stopped, fmt.Errorf("stopping step pod %s: %w", sp.Name, err)
		}
		stopped = append(stopped, sp.Name)
	}
	return stopped, nil
}

// recordReleased records the Warning event DeferReleased on pod, as the controller's
// event recorder would (a core/v1 Event named after the pod and the time): the plugin
// has no broadcaster to run, and one event needs none.
func (d *deferClient) recordReleased(ctx context.Context, pod *corev1.Pod, reason string, stopped []string) error {
	if reason == "" {
		reason = "no reason given"
	}
	msg := fmt.Sprintf("The finalizer %s was removed with kubectl stagehand defer release: %s.", v1alpha1.DeferFinalizer, reason)
	if p := pod.Annotations[v1alpha1.DeferProgressAnnotation]; p != "" {
		msg += fmt.Sprintf(" Progress was %s; the remaining steps do not run.", p)
	}
	if len(stopped) > 0 {
		msg += fmt.Sprintf(" Stopped %s: %s.", runningSteps(len(stopped)), strings.Join(stopped, ", "))
	}
	now := metav1.NewTime(d.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason:              v1alpha1.EventDeferReleased,
		Message:             msg,
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: pluginComponent},
		ReportingController: pluginComponent,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	_, err := d.kube.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// pluginComponent is the event source of what the plugin records.
const pluginComponent = "kubectl-stagehand"
