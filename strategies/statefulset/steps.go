package statefulset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
	"github.com/stagehand-dev/stagehand/strategies/rolling"
)

// steps runs rollingParams.steps on the StatefulSet (docs/statefulsets.md, "A rollout"),
// from the step the revision records, so that a restarted deployer never goes back:
// setReplicas k walks the k highest ordinals to the new template, a pause waits for rollout
// resume or promote (or its duration), and a hook step runs its hook. A promote skips the
// steps left: the walk to all the replicas follows.
func (r *Rollout) steps(ctx context.Context, to *appsv1.ReplicaSet, hash string, desired int32) error {
	steps := r.Params.Steps
	if len(steps) == 0 {
		return nil
	}
	if r.Signals == nil {
		return strategies.Invalidf("%s has rollingParams.steps, but this deployer cannot record steps; use the built-in deployer image", to.Name)
	}
	first := 1
	recorded, ok := v1alpha1.StepOf(to)
	if ok {
		if recorded.State == v1alpha1.StepsDone || recorded.State == v1alpha1.StepsPromoted {
			return nil
		}
		first = min(recorded.Step, len(steps))
	}
	for n := first; n <= len(steps); n++ {
		if r.Record != nil {
			if current, err := r.Record(ctx); err == nil && v1alpha1.Promoted(current) {
				return r.recordStep(ctx, to, n, v1alpha1.StepsPromoted, "", nil)
			}
		}
		step := steps[n-1]
		switch {
		case step.SetReplicas != nil:
			target, err := rolling.StepTarget(*step.SetReplicas, desired)
			if err != nil {
				return strategies.Invalidf("spec.strategy.rollingParams.steps[%d].setReplicas of %s: %v", n-1, to.Name, err)
			}
			action := fmt.Sprintf("setReplicas %s (%d of %d, the highest ordinals)", step.SetReplicas.String(), target, desired)
			if err := r.recordStep(ctx, to, n, v1alpha1.StepRunning, action, nil); err != nil {
				return err
			}
			if err := r.Walker.Walk(ctx, r.Config, hash, target); err != nil {
				return err
			}
		case step.Pause != nil:
			var until *time.Time
			if step.Pause.DurationSeconds != nil {
				end := time.Now().Add(time.Duration(*step.Pause.DurationSeconds) * time.Second)
				if ok && recorded.Step == n && recorded.Until != nil {
					end = *recorded.Until // a restart keeps the pause's end
				}
				until = &end
			}
			if err := r.recordStep(ctx, to, n, v1alpha1.StepPaused, "pause", until); err != nil {
				return err
			}
			promoted, err := r.Signals.WaitResumed(ctx, to.Name, n, until)
			if err != nil {
				return err
			}
			if promoted {
				return r.recordStep(ctx, to, n, v1alpha1.StepsPromoted, "", nil)
			}
		case step.Hook != nil:
			name := v1alpha1.StepName(step, n)
			if err := r.recordStep(ctx, to, n, v1alpha1.StepRunning, "hook "+name, nil); err != nil {
				return err
			}
			if err := r.Hooks.Run(ctx, v1alpha1.StepStage(n), step.Hook); err != nil {
				return fmt.Errorf("running the hook of step %d (%s) of %s: %w", n, name, to.Name, err)
			}
		default:
			return strategies.Invalidf("spec.strategy.rollingParams.steps[%d] of %s has no action: set setReplicas, pause or hook", n-1, to.Name)
		}
	}
	return r.recordStep(ctx, to, len(steps), v1alpha1.StepsDone, "", nil)
}

// recordStep writes step n's state on the revision's record and prints it.
func (r *Rollout) recordStep(ctx context.Context, to *appsv1.ReplicaSet, n int, state v1alpha1.StepState, action string, until *time.Time) error {
	steps := r.Params.Steps
	s := v1alpha1.StepStatus{Step: n, Total: len(steps), Name: v1alpha1.StepName(steps[n-1], n), Action: action, State: state, Until: until}
	r.Walker.Out.Printf("%s", s.String())
	return r.Signals.RecordStep(ctx, to.Name, s)
}
