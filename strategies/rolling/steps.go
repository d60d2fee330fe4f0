package rolling

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// WithSteps returns a copy that records the step it is at and waits for rollout resume
// and promote through signals. A rollout with rollingParams.steps needs it.
func (r *Rolling) WithSteps(signals strategies.StepSignals) *Rolling {
	c := *r
	c.signals = signals
	return &c
}

// StepTarget is the new revision's replicas at the end of a setReplicas step: a count
// (at most desired), or a percentage of desired rounded up. A percentage below 100%
// leaves the old revision at least one replica, so that only 100% (or a count of
// desired) takes it to 0, as admission assumes when it checks exec hooks in Old pods.
func StepTarget(v intstr.IntOrString, desired int32) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(desired), true)
	if err != nil {
		return 0, err
	}
	target := min(max(int32(n), 0), desired)
	if v.Type == intstr.String && v.StrVal != "100%" && desired > 0 {
		target = min(target, desired-1)
	}
	return target, nil
}

// runSteps moves the rollout through rollingParams.steps in order, recording each on the
// new revision first. It starts at the step the revision records, so a restarted
// deployer never goes back to step 1: a setReplicas step converges, a hook that already
// succeeded is not run again, and a pause keeps its end. A promote skips what is left.
func (l *loop) runSteps(ctx context.Context) error {
	steps := l.r.params.Steps
	if len(steps) == 0 {
		return nil
	}
	if l.r.signals == nil {
		return strategies.Invalidf("%s has rollingParams.steps, but this deployer cannot record steps; use the built-in deployer image", l.new.Name)
	}
	first := 1
	recorded, ok := v1alpha1.StepOf(l.new)
	if ok {
		if recorded.State == v1alpha1.StepsDone || recorded.State == v1alpha1.StepsPromoted {
			return nil
		}
		first = min(recorded.Step, len(steps))
	}
	for n := first; n <= len(steps); n++ {
		rs, err := l.r.clients.GetReplicaSet(ctx, l.new.Name)
		if err != nil {
			return fmt.Errorf("reading %s before step %d: %w", l.new.Name, n, err)
		}
		if v1alpha1.Promoted(rs) {
			return l.record(ctx, n, v1alpha1.StepsPromoted, "", nil)
		}
		var prev *v1alpha1.StepStatus
		if ok && recorded.Step == n {
			prev = &recorded
		}
		promoted, err := l.runStep(ctx, n, prev)
		if err != nil {
			return err
		}
		if promoted {
			return l.record(ctx, n, v1alpha1.StepsPromoted, "", nil)
		}
	}
	return l.record(ctx, len(steps), v1alpha1.StepsDone, "", nil)
}

// runStep runs step n (prev is what the revision recorded for it before a restart). It
// reports whether a promote ended it.
func (l *loop) runStep(ctx context.Context, n int, prev *v1alpha1.StepStatus) (bool, error) {
	step := l.r.params.Steps[n-1]
	switch {
	case step.SetReplicas != nil:
		target, err := StepTarget(*step.SetReplicas, l.state.Desired)
		if err != nil {
			return false, strategies.Invalidf("spec.strategy.rollingParams.steps[%d].setReplicas of %s: %v", n-1, l.new.Name, err)
		}
		action := fmt.Sprintf("setReplicas %s (%d of %d)", step.SetReplicas.String(), target, l.state.Desired)
		if err := l.record(ctx, n, v1alpha1.StepRunning, action, nil); err != nil {
			return false, err
		}
		l.target, l.stepping = target, true
		return false, l.run(ctx)
	case step.Pause != nil:
		var until *time.Time
		if step.Pause.DurationSeconds != nil {
			end := time.Now().Add(time.Duration(*step.Pause.DurationSeconds) * time.Second)
			if prev != nil && prev.Until != nil {
				end = *prev.Until // a restart keeps the pause's end
			}
			until = &end
		}
		if err := l.record(ctx, n, v1alpha1.StepPaused, "pause", until); err != nil {
			return false, err
		}
		return l.r.signals.WaitResumed(ctx, l.new.Name, n, until)
	case step.Hook != nil:
		name := v1alpha1.StepName(step, n)
		if err := l.record(ctx, n, v1alpha1.StepRunning, "hook "+name, nil); err != nil {
			return false, err
		}
		if err := l.r.hooks.Run(ctx, v1alpha1.StepStage(n), step.Hook); err != nil {
			return false, fmt.Errorf("running the hook of step %d (%s) of %s: %w", n, name, l.new.Name, err)
		}
		return false, nil
	}
	return false, strategies.Invalidf("spec.strategy.rollingParams.steps[%d] of %s has no action: set setReplicas, pause or hook", n-1, l.new.Name)
}

// record writes step n's state on the new revision and prints it.
func (l *loop) record(ctx context.Context, n int, state v1alpha1.StepState, action string, until *time.Time) error {
	steps := l.r.params.Steps
	s := v1alpha1.StepStatus{Step: n, Total: len(steps), Name: v1alpha1.StepName(steps[n-1], n), Action: action, State: state, Until: until}
	l.r.out.Printf("%s", s.String())
	return l.r.signals.RecordStep(ctx, l.new.Name, s)
}
