package deployer

import (
	"context"
	"fmt"
	"time"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
	"github.com/stagehand-dev/stagehand/strategies"
)

// FailureHook is the flow of the failure-hook runner pod (stagehand-deployer
// --failure-hook), which the controller starts once a revision has Failed and its deployer
// pod is gone or finished: it runs the snapshot's failed hook once, at stage failed, with
// the hook's own bound as its deadline, and prints its output as the deployer prints every
// hook's. An exec hook that finds no running pod to run in ends the runner with the
// reason HookNotRun (exit 1), never as a success. It scales nothing: the controller rolls
// back (or freezes) after it.
func FailureHook(ctx context.Context, d *Deployer) error {
	spec := &d.Inputs.Config.Spec
	hook := v1alpha1.FailureHookOf(spec)
	to := d.Inputs.To.Name
	if hook == nil {
		d.Done = fmt.Sprintf("revision %s has no failed hook: nothing to run", to)
		return nil
	}
	timeout := revision.FailureHookTimeout(spec)
	d.Out.Printf("Revision %s failed (%s): running its failed hook (bound %s)", to, revision.StatusReasonText(d.Inputs.To), timeout)
	runner := hookpod.NewRunner(d.Client.CoreV1(), d.Inputs.To, hookpod.Options{
		Labels: spec.Strategy.Labels, Annotations: spec.Strategy.Annotations,
		Deadline: time.Now().Add(timeout), Out: d.Out, Log: d.Log, Stagehand: d.Stagehand,
	})
	if err := (strategies.PodHooks{Runner: runner}).Run(ctx, v1alpha1.FailureHookStage, hook); err != nil {
		return fmt.Errorf("running the failed hook of %s: %w", to, err)
	}
	if why, notRun := runner.NotRunReason(v1alpha1.FailureHookStage); notRun {
		// Not a success: nothing was undone (DESIGN.md §4 invariant 11). The controller
		// records the failure hook NotRun with this message.
		return &Failure{Reason: v1alpha1.ReasonHookNotRun, Code: v1alpha1.ExitFailed,
			Message: why + "; nothing was undone"}
	}
	d.Done = fmt.Sprintf("the failed hook of revision %s succeeded", to)
	return nil
}
