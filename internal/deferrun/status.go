package deferrun

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// Status is one pod's defer phase, as the table shows it and -o prints it.
type Status struct {
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
	RunError string    `json:"runError,omitempty"`
	StepPods []StepPod `json:"stepPods,omitempty"`
	// EvictionRequests are the requests to evict the pod, when it names Stagehand as an
	// eviction responder (BeforeEviction).
	EvictionRequests []EvictionRequest `json:"evictionRequests,omitempty"`
	deadline         string            // the DEADLINE column
	policy           *v1alpha1.DeferPolicy
}

// StepPod is one pod a step ran in.
type StepPod struct {
	Name     string `json:"name"`
	Step     string `json:"step"`
	Phase    string `json:"phase"`
	ExitCode *int32 `json:"exitCode,omitempty"`
}

// inDeferPhase lists the pods of ns (every namespace when "") in their defer phase: a run
// without an outcome yet, or Terminating with the finalizer.
func (c *Client) inDeferPhase(ctx context.Context, ns string) ([]*Status, error) {
	list, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	rows := []*Status{}
	for i := range list.Items {
		pod := &list.Items[i]
		if _, isStep := pod.Labels[v1alpha1.DeferStepOfLabel]; isStep {
			continue
		}
		run, _ := v1alpha1.DeferRunOf(pod)
		waiting := pod.DeletionTimestamp != nil && v1alpha1.HasDeferFinalizer(pod)
		if waiting || (run != nil && !run.Done()) {
			rows = append(rows, c.statusOf(ctx, pod))
		}
	}
	slices.SortFunc(rows, func(a, b *Status) int {
		return strings.Compare(a.Namespace+"/"+a.Pod, b.Namespace+"/"+b.Pod)
	})
	return rows, nil
}

// podStatus is one pod's defer phase, whatever its state, with its step pods.
func (c *Client) podStatus(ctx context.Context, ns, name string) (*Status, error) {
	pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %q not found in namespace %q", name, ns)
	}
	if err != nil {
		return nil, err
	}
	st := c.statusOf(ctx, pod)
	steps, err := c.stepPods(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("listing the step pods of pod %s: %w", name, err)
	}
	slices.SortFunc(steps, func(a, b *corev1.Pod) int {
		if byTime := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); byTime != 0 {
			return byTime
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, sp := range steps {
		st.StepPods = append(st.StepPods, stepPodOf(sp, st.policy))
	}
	st.EvictionRequests = c.evictionRequests(ctx, pod)
	return st, nil
}

// stepPods lists the step pods of pod (deferstep.Selector) from the apiserver.
func (c *Client) stepPods(ctx context.Context, pod *corev1.Pod) ([]*corev1.Pod, error) {
	list, err := c.Kube.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: deferstep.Selector(pod).String()})
	if err != nil {
		return nil, err
	}
	steps := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		steps[i] = &list.Items[i]
	}
	return steps, nil
}

// statusOf reads pod's run and names its current step from the policy, if readable.
func (c *Client) statusOf(ctx context.Context, pod *corev1.Pod) *Status {
	st := &Status{
		Namespace: pod.Namespace, Pod: pod.Name,
		Progress:    v1alpha1.DeferProgressOf(pod),
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
			st.policy = c.policy(ctx, pod.Namespace, run.Policy)
		}
		if p := st.policy; p != nil && run.Current < len(p.Spec.Steps) && !run.Done() {
			st.Step = p.Spec.Steps[run.Current].Name
		}
		if run.Deadline != nil && !run.Done() {
			st.Deadline = run.Deadline
			st.deadline = "passed"
			if left := run.Deadline.Sub(c.now()); left > 0 {
				st.deadline = "in " + duration.HumanDuration(left)
			}
		}
	}
	st.State = State(st, run, c.now())
	return st
}

// State is the STATE column of st, whose run is run: where the run is, in the
// controller's terms (controller/deferpolicy advance). It reads st's RunError,
// Terminating and Finalizer only.
func State(st *Status, run *v1alpha1.DeferRun, now time.Time) string {
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
	case run.Started == nil && run.When.BeforeStop():
		return "Starting"
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
func stepPodOf(sp *corev1.Pod, policy *v1alpha1.DeferPolicy) StepPod {
	out := StepPod{Name: sp.Name, Step: orDash(sp.Labels[v1alpha1.DeferStepLabel]), Phase: string(sp.Status.Phase)}
	if i, err := strconv.Atoi(out.Step); err == nil && policy != nil && i >= 1 && i <= len(policy.Spec.Steps) &&
		sp.Labels[v1alpha1.DeferPolicyLabel] == policy.Name {
		out.Step = fmt.Sprintf("%d (%s)", i, policy.Spec.Steps[i-1].Name)
	}
	if sp.DeletionTimestamp != nil {
		out.Phase += " (stopping)"
	}
	if code, ok := podstatus.ExitCode(sp, ""); ok {
		out.ExitCode = &code
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
