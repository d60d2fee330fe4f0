package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/deferrun"
	"github.com/stagehand-dev/stagehand/internal/revisions"
	"github.com/stagehand-dev/stagehand/internal/rollout"
	"github.com/stagehand-dev/stagehand/internal/tree"
)

// getOptions are the flags of `get`.
type getOptions struct {
	watch, untilComplete bool
	noColor, ascii       bool
	timeout              time.Duration
}

func newGetCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get dc/NAME [--watch [--until-complete]] [--timeout D]",
		Short: "Show a DeploymentConfig as a tree: its revisions, deployer and hook pods, ExecutionHooks and pods, with status marks",
		Long: `Show a DeploymentConfig as a tree: its triggers and conditions; each kept revision (newest
first) with its phase, cause, images and ready/desired; under the latest revision its
deployer pod, hook pods and ExecutionHooks; and every revision's pods, with their defer steps.

Marks: ✔ complete/ready, ◌ progressing/pending, ✖ failed, ⚠ degraded, ○ scaled to 0 or
inactive (--ascii: + ~ x ! o).

With --watch the tree is redrawn from watches whenever it changes. On a terminal it is
redrawn in place, in colour. Otherwise (a pipe, a CI log, or --no-color) a new full tree is
printed, after a blank line and a "--- <time>" line, each time what it shows changes.

--until-complete (implies --watch) ends the watch when the rollout in progress ends: exit 0
when the latest revision is Complete, 1 when it is Failed. When no rollout is in progress
as the command starts, it waits for the next one, so it can be started before a change.`,
		Example: `  kubectl stagehand get dc/web
  kubectl stagehand get dc/web --watch
  kubectl stagehand get dc/web -w --until-complete --timeout 10m   # in CI: start it, then change the DC`,
		ValidArgsFunction: completeGetArgs(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("get takes one DeploymentConfig (NAME or dc/NAME), got %d arguments", len(args))
			}
			name, err := parseRef(args[0])
			if err != nil {
				return err
			}
			if o.timeout < 0 {
				return usagef("--timeout must not be negative")
			}
			c, err := newClient(flags)
			if err != nil {
				return err
			}
			g := &getter{kube: c.Kube, stagehand: c.Stagehand, ns: c.Namespace, name: name, out: streams.Out, now: time.Now}
			g.style, g.tty = getStyle(streams.Out, o)
			if !o.watch && !o.untilComplete {
				return g.once(cmd.Context())
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, o.timeout)
				defer cancel()
			}
			return g.watch(ctx, o.untilComplete)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", false, "keep the tree up to date from watches until interrupted")
	f.BoolVar(&o.untilComplete, "until-complete", false, "with --watch: exit when the rollout in progress (or else the next one) ends: 0 Complete, 1 Failed")
	f.DurationVar(&o.timeout, "timeout", 0, "with --watch: stop after this long (0: no limit); with --until-complete, a timeout exits 1")
	f.BoolVar(&o.noColor, "no-color", false, "no colour and, with --watch, no redrawing in place: a new tree for each change")
	f.BoolVar(&o.ascii, "ascii", false, "draw marks and the tree in ASCII instead of Unicode symbols")
	return cmd
}

// getStyle colours and redraws only on a terminal, and never with --no-color or NO_COLOR.
func getStyle(out io.Writer, o getOptions) (tree.Style, bool) {
	tty := isTerminalWriter(out) && !o.noColor && os.Getenv("NO_COLOR") == ""
	return tree.Style{Color: tty, ASCII: o.ascii}, tty
}

// isTerminalWriter reports whether w is a character device (a terminal), without a dependency.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// completeGetArgs completes the names of the DeploymentConfigs in the namespace, as NAME
// or, once the user typed "dc/", as dc/NAME.
func completeGetArgs(flags *genericclioptions.ConfigFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := newClient(flags)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return getDCNameCompletions(cmd.Context(), c.Stagehand, c.Namespace, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func getDCNameCompletions(ctx context.Context, sh stagehandclient.Interface, ns, toComplete string) []string {
	list, err := sh.StagehandV1alpha1().DeploymentConfigs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	prefix := ""
	if kind, _, found := strings.Cut(toComplete, "/"); found {
		prefix = kind + "/"
	}
	var out []string
	for _, dc := range list.Items {
		if name := prefix + dc.Name; strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out
}

// getter reads one DeploymentConfig and draws it.
type getter struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	ns, name  string
	out       io.Writer
	style     tree.Style
	// tty redraws in place; without it, watch prints a new tree for each change.
	tty bool
	now func() time.Time
	// last is the last tree printed, without ages.
	last string
}

// once reads the objects and prints their tree.
func (g *getter) once(ctx context.Context) error {
	o, err := g.list(ctx)
	if err != nil {
		return err
	}
	style := g.style
	style.Now = g.now()
	g.build(o).Render(g.out, style)
	return nil
}

// build lays out the objects, with the pods' defer steps as `defer status` shows them.
func (g *getter) build(o *tree.Objects) *tree.View {
	return tree.Build(o, func(pod *corev1.Pod) string { return getDeferText(pod, g.now()) })
}

// getDeferText is a pod's defer progress and the STATE of `defer status`, or "".
func getDeferText(p *corev1.Pod, now time.Time) string {
	progress := v1alpha1.DeferProgressOf(p)
	run, err := v1alpha1.DeferRunOf(p)
	if progress == "" && run == nil && err == nil {
		return ""
	}
	st := &deferrun.Status{Terminating: p.DeletionTimestamp != nil, Finalizer: v1alpha1.HasDeferFinalizer(p)}
	if err != nil {
		st.RunError = err.Error()
	}
	if progress == "" && run != nil {
		progress = run.Progress()
	}
	return fmt.Sprintf("defer steps %s: %s", orDash(progress), deferrun.State(st, run, now))
}

// byConfig selects what carries the DC's config label: its ReplicaSets, its pods (deployer,
// hook and application pods) and its hooks' ExecutionHooks.
func (g *getter) byConfig() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=" + g.name}
}

// list reads the DC and what belongs to it.
func (g *getter) list(ctx context.Context) (*tree.Objects, error) {
	dc, err := g.stagehand.StagehandV1alpha1().DeploymentConfigs(g.ns).Get(ctx, g.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deploymentconfig %q not found in namespace %q", g.name, g.ns)
	}
	if err != nil {
		return nil, fmt.Errorf("reading deploymentconfig %s: %w", g.name, err)
	}
	o := &tree.Objects{DC: dc}
	rss, err := revisions.Client{Kube: g.kube}.List(ctx, g.ns, g.name, dc.Spec.StatefulSet != nil)
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of %s: %w", g.name, err)
	}
	o.ReplicaSets = revision.Pointers(rss)
	if o.StatefulSet, err = g.statefulSet(ctx, dc); err != nil {
		return nil, err
	}
	var lists [][]*corev1.Pod
	for _, opts := range g.podLists(dc) {
		pods, err := g.kube.CoreV1().Pods(g.ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", g.name, err)
		}
		list := make([]*corev1.Pod, 0, len(pods.Items))
		for i := range pods.Items {
			list = append(list, &pods.Items[i])
		}
		lists = append(lists, list)
	}
	o.Pods = mergePods(lists)
	hooks, err := g.stagehand.StagehandV1alpha1().ExecutionHooks(g.ns).List(ctx, g.byConfig())
	switch {
	case execHooksOptional(err):
	case err != nil:
		return nil, fmt.Errorf("listing the ExecutionHooks of %s: %w", g.name, err)
	default:
		for i := range hooks.Items {
			o.ExecutionHooks = append(o.ExecutionHooks, &hooks.Items[i])
		}
	}
	o.Receipts = g.receipts(ctx)
	return o, nil
}

// receipts are the DC's notification receipts; none, without an error, for a user who may
// not list them or a cluster without their CRD.
func (g *getter) receipts(ctx context.Context) []*v1alpha1.RolloutDelivery {
	list, err := g.stagehand.StagehandV1alpha1().RolloutDeliveries(g.ns).List(ctx, g.byConfig())
	if err != nil {
		return nil
	}
	out := make([]*v1alpha1.RolloutDelivery, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// execHooksOptional is an error that leaves the ExecutionHooks out of the tree instead of
// failing: a user who may not read them, or a cluster without their CRD.
func execHooksOptional(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// print draws the objects: in place on a terminal (every time: the ages move), otherwise
// as a new full tree after a blank line and a timestamp line, and only when the tree
// changed (the ages left out).
func (g *getter) print(o *tree.Objects) {
	now := g.now()
	view := g.build(o)
	var key strings.Builder
	view.Render(&key, tree.Style{ASCII: g.style.ASCII})
	if !g.tty && key.String() == g.last {
		return
	}
	first := g.last == ""
	g.last = key.String()
	var b strings.Builder
	switch {
	case g.tty:
		b.WriteString("\x1b[H\x1b[2J") // home, clear the screen
	case !first:
		b.WriteString("\n")
		fallthrough
	default:
		fmt.Fprintf(&b, "--- %s\n", now.Format(time.RFC3339))
	}
	style := g.style
	style.Now = now
	view.Render(&b, style)
	_, _ = io.WriteString(g.out, b.String())
}

// getUntil tells when --until-complete is done: when the latest revision, newer than
// the baseline, is Complete or Failed, and the DC's status says so too.
type getUntil struct {
	baseline int64
	started  bool
}

// check returns done with nil for Complete and a *rollout.RolloutFailed for Failed. On
// its first call it fixes the baseline: a rollout in progress is the one to wait for;
// when the latest revision has already ended, the next one is.
func (e *getUntil) check(o *tree.Objects) (bool, error) {
	latest := o.Latest()
	if !e.started {
		e.started = true
		e.baseline = o.DC.Status.LatestVersion - 1
		if latest != nil && revision.Phase(latest).IsTerminal() {
			e.baseline = o.DC.Status.LatestVersion
		}
	}
	if latest == nil || o.DC.Status.LatestVersion <= e.baseline {
		return false, nil
	}
	// The DC's status (its phase and conditions) follows the revision within the
	// controller's gather window; the last tree waits for it, so that it says the same.
	if !o.DC.Status.Phase.IsTerminal() || o.DC.Status.ObservedGeneration < o.DC.Generation {
		return false, nil
	}
	switch revision.Phase(latest) {
	case v1alpha1.RevisionPhaseComplete:
		return true, nil
	case v1alpha1.RevisionPhaseFailed:
		return true, &rollout.RolloutFailed{RevisionName: latest.Name, Reason: revision.StatusReasonText(latest)}
	}
	return false, nil
}

// waiting says what --until-complete waits for, when it gives up.
func (e *getUntil) waiting(o *tree.Objects) string {
	if latest := o.Latest(); latest != nil && o.DC.Status.LatestVersion > e.baseline {
		return fmt.Sprintf("revision %s is %s", latest.Name, revision.Phase(latest))
	}
	return fmt.Sprintf("no rollout after revision %d started", e.baseline)
}
