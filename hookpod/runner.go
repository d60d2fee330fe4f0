package hookpod

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Runner runs the lifecycle hooks of one revision with their failure policies, records
// events on the DeploymentConfig and prints progress lines. Build it with NewRunner.
type Runner struct {
	revision    *appsv1.ReplicaSet
	labels      map[string]string
	annotations map[string]string
	deadline    time.Time
	pods        corev1client.PodInterface
	executor    HookExecutor
	stagehand   stagehandclient.Interface
	events      EventRecorder
	out         Printer
	log         *logrus.Entry
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error
	// used is set once Run is given a hook: only then can the revision have hook pods.
	used atomic.Bool

	outcomesMu sync.Mutex
	outcomes   []v1alpha1.HookOutcome
	notRunWhy  map[string]string // by stage: why a hook did not run
}

// Options are the settings of a Runner beyond its clients.
type Options struct {
	// Labels and Annotations are the strategy's, added to every hook pod.
	Labels, Annotations map[string]string
	// Deadline is when the deployer's activeDeadlineSeconds runs out; zero: none.
	Deadline time.Time
	// Out receives progress lines and the hooks' log lines.
	Out Printer
	// Log is the deployer's logger.
	Log *logrus.Entry
	// Stagehand is the client of exec hooks' ExecutionHooks; without it an exec hook is
	// an InvalidHookError.
	Stagehand stagehandclient.Interface
}

// NewRunner returns the Runner of revision over core (the revision's namespace is used).
func NewRunner(core corev1client.CoreV1Interface, revision *appsv1.ReplicaSet, o Options) *Runner {
	pods := core.Pods(revision.Namespace)
	log := o.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	return &Runner{
		revision: revision, labels: o.Labels, annotations: o.Annotations, deadline: o.Deadline,
		pods: pods, executor: NewExecutor(pods, o.Out), stagehand: o.Stagehand,
		events: NewEventRecorder(core.Events(revision.Namespace), revision, log),
		out:    o.Out, log: log, now: time.Now, sleep: sleep,
	}
}

// Run runs hook at stage (pre, mid or post) with its failure policy. A nil hook prints
// "--> <stage> hook: none". A hook whose pod already succeeded for this revision (a
// deployer run again, or continued after --until) is not run again. It returns nil when
// the hook succeeded, was ignored or could not run (an exec hook with no running pod:
// recorded NotRun, see NotRunReason), an *AbortError when it stops the rollout, an
// *InvalidHookError when it cannot be built, and an error wrapping ctx.Err() when ctx is
// done (the running hook pod is deleted).
func (r *Runner) Run(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error {
	if hook == nil {
		r.printf("%s hook: none", stage)
		return nil
	}
	r.used.Store(true)
	resume, kind := r.resume, "hook pod"
	if hook.Exec != nil {
		if r.stagehand == nil {
			return &InvalidHookError{Message: "this deployer has no client for stagehand.dev resources, which exec hooks need"}
		}
		resume, kind = r.resumeExec, "exec hook"
	}
	done, first, err := resume(ctx, stage)
	if err != nil || done {
		return err
	}
	started := r.now()
	maxAttempts := MaxAttempts(hook)
	bo := NewBackOff(hook.Retry)
	for attempt := int32(1); ; attempt++ {
		n := first + int(attempt) - 1
		var name string
		var run func(ctx context.Context) error
		if hook.Exec != nil {
			name = v1alpha1.HookPodName(r.revision.Name, stage, n)
			run = func(ctx context.Context) error { return r.execAttempt(ctx, stage, name, hook.Exec) }
		} else {
			pod, err := Build(Spec{Revision: r.revision, Stage: stage, Attempt: n, Hook: hook,
				Labels: r.labels, Annotations: r.annotations, Deadline: r.deadline, Now: r.now()})
			if err != nil {
				return err
			}
			name = pod.Name
			run = func(ctx context.Context) error { return r.executor.Execute(ctx, pod) }
		}
		note := attemptNote(attempt, maxAttempts)
		r.events.Eventf(corev1.EventTypeNormal, v1alpha1.EventHookStarted, v1alpha1.MsgHookStarted, stage, name, note)
		r.printf("%s hook %s: running%s", stage, name, note)
		err = run(ctx)
		if err == nil {
			r.events.Eventf(corev1.EventTypeNormal, v1alpha1.EventHookSucceeded, v1alpha1.MsgHookSucceeded, stage, name, note)
			r.printf("%s hook %s: succeeded", stage, name)
			r.finished(stage, v1alpha1.HookResultSucceeded, started)
			return nil
		}
		if r.notRun(stage, name, note, started, err) {
			return nil
		}
		var failed Failure
		if !errors.As(err, &failed) {
			var invalid *InvalidHookError
			if errors.As(err, &invalid) {
				return err
			}
			return fmt.Errorf("running the %s %s %s: %w", stage, kind, name, err)
		}
		delay := bo.NextBackOff()
		fits := r.deadline.IsZero() || r.now().Add(delay).Before(r.deadline)
		decision := Decide(hook.FailurePolicy, attempt, maxAttempts, fits)
		r.events.Eventf(corev1.EventTypeWarning, v1alpha1.EventHookFailed, v1alpha1.MsgHookFailed, stage, name, note, failed.text(), decisionText(decision, hook.FailurePolicy))
		r.log.WithFields(logrus.Fields{"stage": stage, "hook": name, "failure": failed.text(), "decision": decision}).Warn("hook failed")
		switch decision {
		case DecisionIgnore:
			r.printf("%s hook %s: failed (%s), ignored (failurePolicy Ignore)", stage, name, failed.text())
			r.finished(stage, v1alpha1.HookResultIgnored, started)
			return nil
		case DecisionRetry:
			r.printf("%s hook %s: failed (%s), retrying in %s (attempt %d of %d)", stage, name, failed.text(), delay, attempt+1, maxAttempts)
			if err := r.sleep(ctx, delay); err != nil {
				return fmt.Errorf("waiting to retry the %s hook: %w", stage, err)
			}
		default:
			r.printf("%s hook %s: failed (%s)", stage, name, failed.text())
			r.finished(stage, v1alpha1.HookResultFailed, started)
			return &AbortError{Stage: stage, Policy: hook.FailurePolicy, Attempts: attempt,
				OutOfTime: attempt < maxAttempts && !fits, Last: failed}
		}
	}
}

// notRun reports whether err is an attempt that could not run (*NotRunError); it records
// the hook NotRun, with a Warning event and a progress line, never as a success. The
// rollout goes on; the failure-hook runner reads NotRunReason to say so.
func (r *Runner) notRun(stage, name, note string, started time.Time, err error) bool {
	var skipped *NotRunError
	if !errors.As(err, &skipped) {
		return false
	}
	r.events.Eventf(corev1.EventTypeWarning, v1alpha1.EventHookNotRun, v1alpha1.MsgHookNotRun, stage, name, note, skipped.Reason)
	r.printf("%s hook %s: not run: %s", stage, name, skipped.Reason)
	r.finished(stage, v1alpha1.HookResultNotRun, started)
	r.outcomesMu.Lock()
	defer r.outcomesMu.Unlock()
	if r.notRunWhy == nil {
		r.notRunWhy = map[string]string{}
	}
	r.notRunWhy[stage] = skipped.Error()
	return true
}

// NotRunReason says why the hook at stage did not run, when Run recorded it NotRun.
func (r *Runner) NotRunReason(stage string) (string, bool) {
	r.outcomesMu.Lock()
	defer r.outcomesMu.Unlock()
	why, ok := r.notRunWhy[stage]
	return why, ok
}

// finished records how the hook at stage ended, for Outcomes.
func (r *Runner) finished(stage string, result v1alpha1.HookResult, started time.Time) {
	r.outcomesMu.Lock()
	defer r.outcomesMu.Unlock()
	seconds := math.Round(r.now().Sub(started).Seconds()*1000) / 1000
	r.outcomes = append(r.outcomes, v1alpha1.HookOutcome{Stage: stage, Result: result, Seconds: max(seconds, 0)})
}

// Outcomes are the hooks that Run finished, in order: succeeded, ignored, failed or not
// run. A hook
// that an earlier run finished ("already succeeded") and one whose run was cut short (ctx
// done, an error of the API) are not in it. A nil Runner has none.
func (r *Runner) Outcomes() []v1alpha1.HookOutcome {
	if r == nil {
		return nil
	}
	r.outcomesMu.Lock()
	defer r.outcomesMu.Unlock()
	return append([]v1alpha1.HookOutcome(nil), r.outcomes...)
}

// resume looks at the hook pods that already exist for stage. done is true when one of
// them succeeded. Otherwise first is the attempt number to start with: the newest
// attempt when it is still running (a deployer run again adopts it), the one after it
// when it failed (the failed pod stays for inspection), else 1.
func (r *Runner) resume(ctx context.Context, stage string) (done bool, first int, err error) {
	list, err := r.pods.List(ctx, metav1.ListOptions{LabelSelector: revision.HookPods(r.revision, stage).String()})
	if err != nil {
		return false, 0, fmt.Errorf("listing the %s hook pods of %s: %w", stage, r.revision.Name, err)
	}
	outcomes := map[string]attemptOutcome{}
	for i := range list.Items {
		pod := &list.Items[i]
		if !revision.Owns(r.revision, pod) { // a pod that only has the name says nothing
			continue
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			outcomes[pod.Name] = attemptSucceeded
		case corev1.PodFailed:
			outcomes[pod.Name] = attemptFailed
		default:
			outcomes[pod.Name] = attemptRunning
		}
	}
	return r.resumeFrom(stage, "hook", outcomes)
}

// attemptOutcome is where an earlier attempt of a hook is.
type attemptOutcome int

const (
	attemptRunning attemptOutcome = iota
	attemptSucceeded
	attemptFailed
)

// resumeFrom is resume over the outcomes of the attempts found, by name: done when one
// succeeded; else the newest attempt when it runs, the one after it when it failed, or 1.
func (r *Runner) resumeFrom(stage, kind string, outcomes map[string]attemptOutcome) (done bool, first int, err error) {
	first = 1
	for attempt := 1; attempt <= len(outcomes)+1; attempt++ {
		name := v1alpha1.HookPodName(r.revision.Name, stage, attempt)
		outcome, ok := outcomes[name]
		if !ok {
			continue
		}
		switch outcome {
		case attemptSucceeded:
			r.printf("%s %s %s: already succeeded", stage, kind, name)
			return true, 0, nil
		case attemptFailed:
			first = attempt + 1
		default:
			first = attempt
		}
	}
	return false, first, nil
}

// DeleteSucceeded deletes the pods of the hooks of the revision that succeeded; the
// deployer calls it once the rollout is complete. Failed hook pods stay for inspection
// until the revision is pruned (their ownerReference removes them).
//
// A Runner that was never given a hook lists nothing: the same revision's snapshot gives
// every deployer run of it the same hooks, so a revision without hooks has no hook pods.
func (r *Runner) DeleteSucceeded(ctx context.Context) error {
	if !r.used.Load() {
		return nil
	}
	list, err := r.pods.List(ctx, metav1.ListOptions{LabelSelector: revision.HookPods(r.revision, "").String()})
	if err != nil {
		return fmt.Errorf("listing the hook pods of %s: %w", r.revision.Name, err)
	}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Status.Phase != corev1.PodSucceeded || !revision.Owns(r.revision, pod) {
			continue
		}
		err := r.pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting the succeeded hook pod %s: %w", pod.Name, err)
		}
		r.log.WithField("pod", pod.Name).Debug("deleted the succeeded hook pod")
	}
	return nil
}

func (r *Runner) printf(format string, args ...any) {
	if r.out != nil {
		r.out.Printf(format, args...)
	}
}

func decisionText(d Decision, policy v1alpha1.LifecycleHookFailurePolicy) string {
	switch d {
	case DecisionIgnore:
		return "ignored (failurePolicy Ignore), the rollout goes on"
	case DecisionRetry:
		return "retrying (failurePolicy Retry)"
	}
	if policy == v1alpha1.LifecycleHookFailurePolicyRetry {
		return "no attempts left (failurePolicy Retry), the rollout stops"
	}
	return "the rollout stops (failurePolicy Abort)"
}

// sleep waits d, or returns ctx.Err() when ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
