package executionhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// errEnded is what update returns once the run has ended the hook because its status
// could not be written (endUnwritable): nothing more is recorded.
var errEnded = errors.New("the hook was ended: its status could not be written")

// update applies change to the in-memory status and writes it at once; a conflict
// (someone changed the object) is resolved by writing our status onto the latest
// object. r.mu guards only the in-memory hook, so that readers never wait for the
// apiserver; r.write serialises the changes with their writes, so that each write
// carries every change made before it. A status that the apiserver refuses as too large
// or invalid ends the hook (endUnwritable) instead of being retried for ever.
func (r *run) update(ctx context.Context, change func(st *v1alpha1.ExecutionHookStatus)) error {
	r.write.Lock()
	defer r.write.Unlock()
	if r.ended {
		return errEnded
	}
	r.mu.Lock()
	change(&r.hook.Status)
	setSummary(&r.hook.Status)
	boundStatus(&r.hook.Status)
	hook := r.hook.DeepCopy()
	r.mu.Unlock()
	err := r.writeStatus(ctx, hook)
	if unwritable(err) {
		return r.endUnwritable(ctx, err)
	}
	return err
}

// writeStatus writes hook's status, onto the latest object after a conflict, and keeps
// what was written. The caller holds r.write.
func (r *run) writeStatus(ctx context.Context, hook *v1alpha1.ExecutionHook) error {
	client := r.c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace)
	for range 5 {
		written, err := client.UpdateStatus(ctx, hook, metav1.UpdateOptions{})
		if err == nil {
			r.mu.Lock()
			r.hook = written
			r.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, err := client.Get(ctx, hook.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.UID != hook.UID {
			return apierrors.NewNotFound(v1alpha1.Resource("executionhooks"), hook.Name)
		}
		latest.Status = hook.Status
		hook = latest
	}
	return fmt.Errorf("writing the status of %s: conflicts on every try", hook.Name)
}

// unwritable reports whether the apiserver refused a status for what it is (too large
// for the request or for etcd, or invalid), so that writing it again cannot succeed.
func unwritable(err error) bool {
	return err != nil && (apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err) ||
		strings.Contains(err.Error(), "request is too large"))
}

// endUnwritable ends a hook whose status the apiserver refused: the commands in flight
// are stopped, each container without an outcome fails, the outputs are dropped and
// the messages cut, and the hook fails with reason StatusNotWritable. If even that is
// refused, the entries are dropped too (the summary keeps the counts). The caller holds
// r.write. It returns errEnded, or the error of a write that failed for another reason
// (the run then stops, and the hook's next sync resumes it from what was written).
func (r *run) endUnwritable(ctx context.Context, cause error) error {
	r.ended = true
	r.halt()
	msg := fmt.Sprintf("the hook's status could not be written, so the hook was ended: %v", cause)
	msg = podstatus.TruncateStart(msg, v1alpha1.MaxEntryMessageBytes)
	r.mu.Lock()
	hook := r.hook.DeepCopy()
	r.mu.Unlock()
	st := &hook.Status
	for i := range st.HookStatuses {
		e := &st.HookStatuses[i]
		e.Output = ""
		if e.Error != nil {
			e.Error = e.Error.DeepCopy()
			e.Error.Message = podstatus.TruncateStart(e.Error.Message, 64)
		}
		if e.Succeed == nil {
			e.Succeed, e.CompletionTime = ptrTo(false), now()
			e.Error = hookError(v1alpha1.HookErrorError, reasonStatusNotWritable, "ended before its outcome: see status.error")
		}
	}
	setSummary(st)
	st.CompletionTime = now()
	st.Error = hookError(v1alpha1.HookErrorError, reasonStatusNotWritable, msg)
	setOutcome(st, v1alpha1.ExecutionHookFailed, reasonStatusNotWritable, msg)
	err := r.writeStatus(context.WithoutCancel(ctx), hook)
	if unwritable(err) {
		st.HookStatuses = nil
		err = r.writeStatus(context.WithoutCancel(ctx), hook)
	}
	if err != nil {
		return fmt.Errorf("ending the hook after %v: %w", cause, err)
	}
	r.c.log.WithError(cause).WithField("executionHook", hook.Namespace+"/"+hook.Name).Warning("The status could not be written; the hook failed")
	written := r.snapshot()
	r.c.eventFinished(written)
	r.c.queue.Add(written.Namespace + "/" + written.Name) // for the TTL
	return errEnded
}

// reasonStatusNotWritable is the reason of a hook ended by endUnwritable.
const reasonStatusNotWritable = "StatusNotWritable"

// boundStatus cuts each entry's output (keeping its end) and error message (keeping its
// start) to the entry's share of the status budget (v1alpha1.EntryTextBounds).
func boundStatus(st *v1alpha1.ExecutionHookStatus) {
	output, message := v1alpha1.EntryTextBounds(len(st.HookStatuses))
	for i := range st.HookStatuses {
		e := &st.HookStatuses[i]
		e.Output = strings.ToValidUTF8(podstatus.Tail(e.Output, output), "")
		if e.Error != nil && len(e.Error.Message) > message {
			e.Error = e.Error.DeepCopy() // the caller may still hold it for an event
			e.Error.Message = podstatus.TruncateStart(e.Error.Message, message)
		}
	}
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
