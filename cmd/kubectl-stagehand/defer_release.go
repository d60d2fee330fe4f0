package main

// kubectl stagehand defer release: removes a pod's defer finalizer, stops its running
// steps and records why (docs/cli.md).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

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
// The steps that still run are stopped next, by the controller's own deferstep.Stop.
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

// stopSteps deletes the step pods of pod that still run (deferstep.Stop), and names them.
func (d *deferClient) stopSteps(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	list, err := d.kube.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: deferstep.Selector(pod).String()})
	if err != nil {
		return nil, fmt.Errorf("listing its step pods: %w", err)
	}
	steps := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		steps[i] = &list.Items[i]
	}
	return deferstep.Stop(ctx, d.kube.CoreV1(), steps)
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
