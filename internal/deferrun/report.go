package deferrun

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Report is what `kubectl stagehand defer status` shows: one named pod, or the pods in
// their defer phase.
type Report struct {
	// one is the named pod's status; nil when no pod was named.
	one *Status
	// pods are the pods in their defer phase, when no pod was named.
	pods []*Status
	// where says where pods were looked for, for the message that finds none.
	where string
	// all is true when pods come from every namespace.
	all bool
}

// Status reads the defer phase of the pod named pod in ns, whatever its state, with its
// step pods. With pod "", it reads every pod in its defer phase (a run without an outcome
// yet, or Terminating with the finalizer) in ns, or in every namespace with all.
func (c *Client) Status(ctx context.Context, ns, pod string, all bool) (*Report, error) {
	if pod != "" {
		st, err := c.podStatus(ctx, ns, pod)
		if err != nil {
			return nil, err
		}
		return &Report{one: st}, nil
	}
	where := "in namespace " + ns
	if all {
		ns, where = metav1.NamespaceAll, "in any namespace"
	}
	rows, err := c.inDeferPhase(ctx, ns)
	if err != nil {
		return nil, err
	}
	return &Report{pods: rows, where: where, all: all}, nil
}

// Data is what -o json|yaml prints: the named pod's *Status, or the list of []*Status
// (empty, never null, when no pod is in its defer phase).
func (r *Report) Data() any {
	if r.one != nil {
		return r.one
	}
	return r.pods
}

// Print writes the report as tables: the named pod's row, the outcome of its finished
// run and its step pods; or one row per pod, with a NAMESPACE column for every namespace.
func (r *Report) Print(out io.Writer) {
	switch {
	case r.one != nil:
		printPod(out, r.one)
	case len(r.pods) == 0:
		fmt.Fprintf(out, "No pods are in a defer phase %s.\n", r.where)
	default:
		printTable(out, r.pods, r.all)
	}
}

// printTable writes one row per pod.
func printTable(out io.Writer, rows []*Status, withNamespace bool) {
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

// printPod writes one pod's row, the outcome of a finished run, and its step pods.
func printPod(out io.Writer, st *Status) {
	printTable(out, []*Status{st}, false)
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
	printEvictionRequests(out, st.EvictionRequests)
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
