package executionhook

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// sync moves one hook on: it starts a new hook (resolving the action and the
// containers), resumes a Running hook that has no run in this process, and deletes a
// finished hook once its TTL has passed.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return plumbing.Fatal(err)
	}
	hook, err := c.hooks.ExecutionHooks(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.stopRun(key)
		return nil
	}
	if err != nil {
		return err
	}
	if r := c.runOf(key); r != nil && r.snapshot().UID != hook.UID {
		c.stopRun(key) // deleted and created again under the same name
	}
	switch {
	case hook.Status.Phase.IsTerminal():
		return c.expire(ctx, hook)
	case hook.Status.Phase == v1alpha1.ExecutionHookRunning:
		if c.running(key) {
			return nil
		}
		// Resume from the apiserver's copy, never from a cache that may not yet show the
		// outcomes that the last run wrote: a container that succeeded never runs again.
		live, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if live.Status.Phase == v1alpha1.ExecutionHookRunning {
			c.ensureRun(key, live)
		}
		return nil
	}
	return c.begin(ctx, key, hook)
}

// begin resolves a new hook's action and containers and writes them, with the deadline,
// into its status; a hook that cannot start fails at once with the reason.
func (c *Controller) begin(ctx context.Context, key string, hook *v1alpha1.ExecutionHook) error {
	hook = hook.DeepCopy()
	st := &hook.Status
	action, err := c.actions.HookActions(hook.Namespace).Get(hook.Spec.ActionName)
	if apierrors.IsNotFound(err) {
		// The deployer and users create the action and then the hook at once: the hook's
		// event may come before the action's. Only the apiserver can say it is missing.
		action, err = c.stagehand.StagehandV1alpha1().HookActions(hook.Namespace).Get(ctx, hook.Spec.ActionName, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return c.failHook(ctx, hook, hookError(v1alpha1.HookErrorActionNotFound, "ActionNotFound",
			fmt.Sprintf("HookAction %s does not exist in namespace %s: create it, then create this hook again",
				hook.Spec.ActionName, hook.Namespace)))
	case err != nil:
		return err
	case action.Action.Exec == nil || len(action.Action.Exec.Command) == 0:
		return c.failHook(ctx, hook, hookError(v1alpha1.HookErrorError, "ActionInvalid",
			fmt.Sprintf("HookAction %s has no exec command", action.Name)))
	}
	if rev, ok := hook.Labels[v1alpha1.ExecHookOfLabel]; ok {
		herr, err := c.verifyExecHook(ctx, hook, action, rev)
		if err != nil {
			return err
		}
		if herr != nil {
			return c.failHook(ctx, hook, herr)
		}
	}
	entries, herr, err := c.selectContainers(ctx, hook)
	if err != nil {
		return err
	}
	if herr != nil {
		return c.failHook(ctx, hook, herr)
	}
	timeout := int64(v1alpha1.DefaultActionTimeoutSeconds)
	if action.ActionTimeoutSeconds != nil {
		timeout = min(max(*action.ActionTimeoutSeconds, 1), v1alpha1.MaxActionTimeoutSeconds)
	}
	start := metav1.Now()
	deadline := metav1.NewTime(start.Add(time.Duration(timeout) * time.Second))
	st.Phase = v1alpha1.ExecutionHookRunning
	st.Command = append([]string(nil), action.Action.Exec.Command...)
	st.StartTime, st.Deadline = &start, &deadline
	st.HookStatuses = entries
	setSummary(st)
	written, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).UpdateStatus(ctx, hook, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.recorder.Eventf(written, corev1.EventTypeNormal, v1alpha1.EventExecutionHookStarted, v1alpha1.MsgExecutionHookStarted,
		action.Name, len(entries))
	c.ensureRun(key, written)
	return nil
}

// failHook ends a hook that could not start.
func (c *Controller) failHook(ctx context.Context, hook *v1alpha1.ExecutionHook, herr *v1alpha1.HookError) error {
	st := &hook.Status
	st.Error = herr
	st.CompletionTime = now()
	setSummary(st)
	setOutcome(st, v1alpha1.ExecutionHookFailed, herr.Reason, herr.Message)
	written, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).UpdateStatus(ctx, hook, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.eventFinished(written)
	return nil
}

// expire deletes a finished hook whose TTL has passed, or comes back when it will have.
func (c *Controller) expire(ctx context.Context, hook *v1alpha1.ExecutionHook) error {
	ttl := c.ttl
	if hook.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*hook.Spec.TTLSecondsAfterFinished) * time.Second
	} else if ttl <= 0 {
		return nil
	}
	end := hook.CreationTimestamp.Time
	if hook.Status.CompletionTime != nil {
		end = hook.Status.CompletionTime.Time
	}
	if left := time.Until(end.Add(ttl)); left > 0 {
		return plumbing.RequeueAfter(left, "the hook's TTL has not passed")
	}
	uid := hook.UID
	err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).Delete(ctx, hook.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	c.log.WithField("executionHook", hook.Namespace+"/"+hook.Name).Debug("Deleted a finished hook after its TTL")
	return nil
}
