package executionhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// update changes the status under the lock and writes it; a conflict (someone changed
// the object) is resolved by writing our status onto the latest object.
func (r *run) update(ctx context.Context, change func(st *v1alpha1.ExecutionHookStatus)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.hook.Status)
	setSummary(&r.hook.Status)
	client := r.c.stagehand.StagehandV1alpha1().ExecutionHooks(r.hook.Namespace)
	for range 5 {
		written, err := client.UpdateStatus(ctx, r.hook, metav1.UpdateOptions{})
		if err == nil {
			r.hook = written
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, err := client.Get(ctx, r.hook.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.UID != r.hook.UID {
			return apierrors.NewNotFound(v1alpha1.Resource("executionhooks"), r.hook.Name)
		}
		latest.Status = r.hook.Status
		r.hook = latest
	}
	return fmt.Errorf("writing the status of %s: conflicts on every try", r.hook.Name)
}

// setSummary writes "<succeeded>/<selected>".
func setSummary(st *v1alpha1.ExecutionHookStatus) {
	ok := 0
	for _, s := range st.HookStatuses {
		if s.Succeed != nil && *s.Succeed {
			ok++
		}
	}
	st.Summary = fmt.Sprintf("%d/%d", ok, len(st.HookStatuses))
}

// fail records a final failure of container i.
func (r *run) fail(ctx context.Context, i int, herr *v1alpha1.HookError) {
	if err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
		e := &s.HookStatuses[i]
		e.Succeed = ptrTo(false)
		e.Error = herr
		e.CompletionTime = now()
	}); err != nil {
		r.lost(ctx, err)
		return
	}
	st := r.snapshot().Status.HookStatuses[i]
	r.c.eventContainerFailed(r.snapshot(), st.PodName, st.ContainerName, herr, st.Output)
}

// lost handles a status write that failed: a deleted hook ends the run; other errors
// are logged, and the hook's next sync starts a new run from what was written.
func (r *run) lost(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if !apierrors.IsNotFound(err) {
		h := r.snapshot()
		r.c.log.WithError(err).WithField("executionHook", h.Namespace+"/"+h.Name).Warning("Could not write the status; the hook is synced again")
	}
	r.cancel()
}

// finish writes the hook's outcome once every container has one.
func (r *run) finish(ctx context.Context) {
	err := r.update(ctx, func(s *v1alpha1.ExecutionHookStatus) {
		failed := 0
		for _, e := range s.HookStatuses {
			if e.Succeed == nil || !*e.Succeed {
				failed++
			}
		}
		s.CompletionTime = now()
		if failed == 0 {
			setOutcome(s, v1alpha1.ExecutionHookComplete, "Succeeded",
				fmt.Sprintf("the action succeeded in all %d containers", len(s.HookStatuses)))
		} else {
			setOutcome(s, v1alpha1.ExecutionHookFailed, "ContainersFailed",
				fmt.Sprintf("the action failed in %d of %d containers", failed, len(s.HookStatuses)))
		}
	})
	if err != nil {
		r.lost(ctx, err)
		return
	}
	hook := r.snapshot()
	r.c.eventFinished(hook)
	r.c.queue.Add(hook.Namespace + "/" + hook.Name) // for the TTL
}

// setOutcome sets the terminal phase and both conditions.
func setOutcome(s *v1alpha1.ExecutionHookStatus, phase v1alpha1.ExecutionHookPhase, reason, msg string) {
	s.Phase = phase
	complete, failed := metav1.ConditionFalse, metav1.ConditionFalse
	if phase == v1alpha1.ExecutionHookComplete {
		complete = metav1.ConditionTrue
	} else {
		failed = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ExecutionHookConditionComplete, Status: complete, Reason: reason, Message: msg})
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ExecutionHookConditionFailed, Status: failed, Reason: reason, Message: msg})
}
