package hookpod

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

// An exec hook (LifecycleHook.exec) runs through an ExecutionHook: each attempt is an
// ExecutionHook and its HookAction, both named like the attempt's hook pod would be
// (<revision>-hook-<stage>[-N]), labelled like hook pods and owned by the revision. The
// ExecutionHook controller runs the command in the selected containers; the deployer
// waits for the outcome with a watch.

// ExecFailedError is an exec hook's attempt that failed in some container.
type ExecFailedError struct {
	// Hook is the ExecutionHook's name.
	Hook string
	// Reason is its error type (hook-level) or ContainersFailed.
	Reason string
	// Failures are the failed containers, one line each: pod/container, the error type,
	// its message.
	Failures []string
	// Output is the output tail of the first failed container.
	Output []string
}

func (e *ExecFailedError) Error() string { return e.summary() + e.tailText() }

func (e *ExecFailedError) summary() string {
	return fmt.Sprintf("exec hook %s failed (%s): %s", e.Hook, e.Reason, strings.Join(e.Failures, "; "))
}

func (e *ExecFailedError) advice() string {
	return fmt.Sprintf("see kubectl stagehand exec status %s, then fix the hook's command or its failurePolicy%s", e.Hook, e.tailText())
}

func (e *ExecFailedError) tailText() string {
	if len(e.Output) == 0 {
		return ""
	}
	return "; its output ends with:\n" + strings.Join(e.Output, "\n")
}

// text is the reason and the failed containers, for events and progress lines.
func (e *ExecFailedError) text() string {
	t := e.Reason
	if len(e.Failures) > 0 {
		t += ": " + strings.Join(e.Failures, "; ")
	}
	if len(t) > 400 {
		t = t[:397] + "..."
	}
	return t
}

// NotRunError is an exec hook's attempt that could not run: its ExecutionHook found no
// running pod to run in. It is neither a success nor a failure of the hook: Runner.Run
// records the hook NotRun (DESIGN.md §4 invariant 11) and lets the rollout go on.
type NotRunError struct {
	// Hook is the ExecutionHook's name.
	Hook string
	// Reason says why it did not run.
	Reason string
}

func (e *NotRunError) Error() string {
	return fmt.Sprintf("exec hook %s did not run: %s", e.Hook, e.Reason)
}

// execAttempt runs attempt number attempt of the exec hook at stage: it creates (or, for
// a deployer run again, adopts) the attempt's HookAction and ExecutionHook and waits until
// the hook ends. It returns nil on success, a *NotRunError when the hook selected no
// running pod, an *ExecFailedError when it failed.
func (r *Runner) execAttempt(ctx context.Context, stage, name string, hook *v1alpha1.ExecHook) error {
	if r.stagehand == nil {
		return &InvalidHookError{Message: "this deployer has no client for stagehand.dev resources, which exec hooks need"}
	}
	ns := r.revision.Namespace
	labels := Labels(r.revision, stage, r.labels)
	labels[v1alpha1.ExecHookOfLabel] = r.revision.Name
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{ownerRef(r.revision)}}
	action := &v1alpha1.HookAction{ObjectMeta: meta,
		Action:               v1alpha1.Action{Exec: &v1alpha1.ExecAction{Command: hook.Command}},
		ActionTimeoutSeconds: hook.TimeoutSeconds}
	actions := r.stagehand.StagehandV1alpha1().HookActions(ns)
	err := apiretry.Do(ctx, func() error {
		_, err := actions.Create(ctx, action, metav1.CreateOptions{})
		return err
	})
	if apierrors.IsAlreadyExists(err) {
		existing, err := actions.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the HookAction %s: %w", name, err)
		}
		if err := r.mustOwn("HookAction", existing); err != nil {
			return err
		}
	} else if err != nil {
		return refusedOr(err, "creating the HookAction %s", name)
	}
	eh := &v1alpha1.ExecutionHook{ObjectMeta: *meta.DeepCopy(), Spec: v1alpha1.ExecutionHookSpec{
		ActionName: name,
		PodSelection: v1alpha1.PodSelection{PodContainerSelector: &v1alpha1.PodContainerSelector{
			PodSelector: revision.ExecHookSelector(r.revision, hook.Pods), ContainerList: []string{hook.ContainerName}}},
	}}
	hooks := r.stagehand.StagehandV1alpha1().ExecutionHooks(ns)
	err = apiretry.Do(ctx, func() error {
		_, err := hooks.Create(ctx, eh, metav1.CreateOptions{})
		return err
	})
	if apierrors.IsAlreadyExists(err) {
		existing, err := hooks.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the ExecutionHook %s: %w", name, err)
		}
		if err := r.mustOwn("ExecutionHook", existing); err != nil {
			return err
		}
	} else if err != nil {
		return refusedOr(err, "creating the ExecutionHook %s", name)
	}
	final, err := r.waitExecutionHook(ctx, name)
	if err != nil {
		return err
	}
	if err := r.mustOwn("ExecutionHook", final); err != nil {
		return err
	}
	return execOutcome(final, hook, r)
}

// mustOwn refuses to adopt an object under an exec hook's name that this revision did not
// create (a deployer run again adopts its own): someone else's HookAction would be run,
// or fail the hook with a confusing reason, so the rollout stops with what to do.
func (r *Runner) mustOwn(kind string, obj metav1.Object) error {
	if revision.Owns(r.revision, obj) {
		return nil
	}
	return &InvalidHookError{Message: fmt.Sprintf(
		"a %s named %s already exists and was not created by revision %s: Stagehand names its exec hook's %s "+
			"<revision>-hook-<stage>[-N] and will not adopt one it did not create; delete or rename it, then retry the rollout "+
			"(kubectl stagehand rollout retry)", kind, obj.GetName(), r.revision.Name, kind)}
}

// refusedOr makes an apiserver refusal (Forbidden, Invalid) an InvalidHookError, which no
// retry fixes, and wraps other errors.
func refusedOr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
		return &InvalidHookError{Message: what + ": " + err.Error()}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// execOutcome maps a finished ExecutionHook to the hook's result and prints each
// container's outcome.
func execOutcome(h *v1alpha1.ExecutionHook, hook *v1alpha1.ExecHook, r *Runner) error {
	for _, s := range h.Status.HookStatuses {
		result := "succeeded"
		if s.Succeed == nil || !*s.Succeed {
			result = "failed"
			if s.Error != nil {
				result += fmt.Sprintf(" (%s: %s)", s.Error.ErrorType, s.Error.Message)
			}
		}
		r.printf("exec hook %s: %s/%s %s after %d attempts", h.Name, s.PodName, s.ContainerName, result, s.Attempts)
		for _, line := range splitLines(s.Output) {
			r.printf("exec hook %s: %s/%s | %s", h.Name, s.PodName, s.ContainerName, line)
		}
	}
	if h.Status.Phase == v1alpha1.ExecutionHookComplete {
		return nil
	}
	if h.Status.Error != nil && h.Status.Error.ErrorType == v1alpha1.HookErrorNoPods {
		return &NotRunError{Hook: h.Name, Reason: fmt.Sprintf("no running pod to run in (pods: %s, container %s)", podsOf(hook), hook.ContainerName)}
	}
	e := &ExecFailedError{Hook: h.Name, Reason: "ContainersFailed"}
	if h.Status.Error != nil {
		e.Reason = string(h.Status.Error.ErrorType)
		e.Failures = append(e.Failures, h.Status.Error.Message)
	}
	for _, s := range h.Status.HookStatuses {
		if s.Succeed != nil && *s.Succeed {
			continue
		}
		msg := "no outcome"
		if s.Error != nil {
			msg = fmt.Sprintf("%s: %s", s.Error.ErrorType, s.Error.Message)
		}
		e.Failures = append(e.Failures, fmt.Sprintf("%s/%s %s", s.PodName, s.ContainerName, msg))
		if e.Output == nil {
			e.Output = splitLines(s.Output)
		}
	}
	return e
}

// podsOf is the pods an exec hook selects, as its spec says or by default.
func podsOf(hook *v1alpha1.ExecHook) string {
	if hook.Pods == "" {
		return "the default of its stage"
	}
	return string(hook.Pods)
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitExecutionHook watches the ExecutionHook name until it has finished.
func (r *Runner) waitExecutionHook(ctx context.Context, name string) (*v1alpha1.ExecutionHook, error) {
	hooks := r.stagehand.StagehandV1alpha1().ExecutionHooks(r.revision.Namespace)
	// The clientset says whether it can stream a watch's initial list (a fake cannot).
	lw := listwatch.ByName(name, hooks.List, hooks.Watch, r.stagehand)
	var final *v1alpha1.ExecutionHook
	done := func(obj any) bool {
		h, ok := obj.(*v1alpha1.ExecutionHook)
		if ok && h.Name == name && h.Status.Phase.IsTerminal() {
			final = h
			return true
		}
		return false
	}
	pre := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(r.revision.Namespace + "/" + name)
		if err != nil || !exists {
			return false, err
		}
		return done(obj), nil
	}
	err := listwatch.Until(ctx, lw, &v1alpha1.ExecutionHook{}, pre, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("ExecutionHook %s was deleted before it finished", name)
		}
		return done(ev.Object), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("waiting for the ExecutionHook %s: %w", name, err)
	}
	return final, nil
}

// resumeExec is resume for an exec hook: it looks at the ExecutionHooks of the stage.
func (r *Runner) resumeExec(ctx context.Context, stage string) (done bool, first int, err error) {
	list, err := r.stagehand.StagehandV1alpha1().ExecutionHooks(r.revision.Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: revision.HookPods(r.revision, stage).String()})
	if err != nil {
		return false, 0, fmt.Errorf("listing the %s exec hooks of %s: %w", stage, r.revision.Name, err)
	}
	outcomes := map[string]attemptOutcome{}
	for i := range list.Items {
		h := &list.Items[i]
		if !revision.Owns(r.revision, h) {
			continue
		}
		switch h.Status.Phase {
		case v1alpha1.ExecutionHookComplete:
			outcomes[h.Name] = attemptSucceeded
		case v1alpha1.ExecutionHookFailed:
			outcomes[h.Name] = attemptFailed
		default:
			outcomes[h.Name] = attemptRunning
		}
	}
	return r.resumeFrom(stage, "exec hook", outcomes)
}
