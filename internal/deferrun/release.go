package deferrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// ReleaseResult is what Release did.
type ReleaseResult struct {
	// Pod is the pod's name.
	Pod string
	// Released is false when the pod did not carry the finalizer, or went away first
	// (Gone).
	Released, Gone bool
	// Terminating is whether the pod was being deleted.
	Terminating bool
	// Stopped names the step pods that were stopped.
	Stopped []string
	// EventErr is why the event could not be recorded.
	EventErr error
}

// Print says what Release did on out, and on errOut a note when the pod was not being
// deleted and a warning when the event could not be recorded.
func (r *ReleaseResult) Print(out, errOut io.Writer) {
	if r.Gone {
		fmt.Fprintf(out, "pod/%s went away before its finalizer was removed: nothing to release\n", r.Pod)
		return
	}
	if !r.Released {
		fmt.Fprintf(out, "pod/%s does not carry the finalizer %s: nothing to release\n", r.Pod, v1alpha1.DeferFinalizer)
		return
	}
	fmt.Fprintf(out, "pod/%s released: finalizer %s removed, %s stopped\n", r.Pod, v1alpha1.DeferFinalizer, runningSteps(len(r.Stopped)))
	if !r.Terminating {
		fmt.Fprintf(errOut, "note: pod/%s is not being deleted; it stays without the finalizer (annotation %s), so its AfterTermination steps will not run when it is deleted\n", r.Pod, v1alpha1.DeferReleasedAnnotation)
	}
	if r.EventErr != nil {
		fmt.Fprintf(errOut, "warning: the event %s could not be recorded on pod/%s: %v\n", v1alpha1.EventDeferReleased, r.Pod, r.EventErr)
	}
}

func runningSteps(n int) string {
	if n == 1 {
		return "1 running step"
	}
	return fmt.Sprintf("%d running steps", n)
}

// Release removes the finalizer from pod ns/name, stops its running step pods, and records
// the event DeferReleased. A pod without the finalizer is left alone.
//
// The finalizer goes first: it is what the user needs, and once it is gone the controller
// no longer starts steps for the pod (it only acts on a deleted pod that carries it).
// The steps that still run are stopped next, by the controller's own deferstep.Stop.
func (c *Client) Release(ctx context.Context, ns, name, reason string) (*ReleaseResult, error) {
	pods := c.Kube.CoreV1().Pods(ns)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, err
	}
	res := &ReleaseResult{Pod: name}
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
			v1alpha1.MarkDeferReleased(cp, c.now())
		}
		pod = nil // a conflict reads it again
		updated, err := pods.Update(ctx, cp, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		pod, res.Released = updated, true
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		res.Gone = true // someone else released it in between
		return res, nil
	case err != nil:
		return nil, fmt.Errorf("removing the finalizer %s from pod %s: %w", v1alpha1.DeferFinalizer, name, err)
	case !res.Released:
		return res, nil
	}
	res.Terminating = pod.DeletionTimestamp != nil
	stopped, stopErr := c.stopRunning(ctx, pod)
	res.Stopped = stopped
	res.EventErr = c.recordReleased(ctx, pod, reason, stopped)
	if stopErr != nil {
		return res, fmt.Errorf("the finalizer is removed, but %w; delete it with kubectl delete pod", stopErr)
	}
	return res, nil
}

// stopRunning stops the step pods of pod that still run (deferstep.Stop), and names them.
func (c *Client) stopRunning(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	steps, err := c.stepPods(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("listing its step pods: %w", err)
	}
	return deferstep.Stop(ctx, c.Kube.CoreV1(), steps)
}

// recordReleased records the Warning event DeferReleased on pod, as the controller's
// event recorder would (a core/v1 Event named after the pod and the time): the plugin
// has no broadcaster to run, and one event needs none.
func (c *Client) recordReleased(ctx context.Context, pod *corev1.Pod, reason string, stopped []string) error {
	if reason == "" {
		reason = "no reason given"
	}
	msg := fmt.Sprintf("The finalizer %s was removed with kubectl stagehand defer release: %s.", v1alpha1.DeferFinalizer, reason)
	if p := v1alpha1.DeferProgressOf(pod); p != "" {
		msg += fmt.Sprintf(" Progress was %s; the remaining steps do not run.", p)
	}
	if len(stopped) > 0 {
		msg += fmt.Sprintf(" Stopped %s: %s.", runningSteps(len(stopped)), strings.Join(stopped, ", "))
	}
	now := metav1.NewTime(c.now())
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
	_, err := c.Kube.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// pluginComponent is the event source of what the plugin records.
const pluginComponent = "kubectl-stagehand"
