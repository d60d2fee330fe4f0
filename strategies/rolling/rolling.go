package rolling

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// Rolling replaces old pods with new ones a few at a time. Build it with New.
type Rolling struct {
	clients         strategies.Clients
	hooks           strategies.HookRunner
	out             *strategies.Progress
	params          v1alpha1.RollingDeploymentStrategyParams
	minReadySeconds int32
	// first deploys the first revision, which has no old one to roll from.
	first FirstRollout
	// until stops the rollout early (stagehand-deployer --until).
	until strategies.Until
	// signals record the step of a rollout with steps, and wait for resume and promote.
	signals strategies.StepSignals
	// older are the revisions older than To, other than From, that still have replicas.
	older []*appsv1.ReplicaSet
}

var _ strategies.Strategy = &Rolling{}

// FirstRollout builds the strategy that deploys the first revision (no old one) with the
// Rolling params, stopping where until says. DESIGN.md §6: it behaves like Recreate
// without the mid hook, with the pre and post hooks and timeoutSeconds of params. The
// deployer passes recreate.FirstRollout.
type FirstRollout func(params v1alpha1.RollingDeploymentStrategyParams, until strategies.Until) strategies.Strategy

// New returns the Rolling strategy with the defaulted params. first deploys the first
// revision; it is required.
func New(clients strategies.Clients, hooks strategies.HookRunner, out *strategies.Progress,
	params v1alpha1.RollingDeploymentStrategyParams, minReadySeconds int32, first FirstRollout) *Rolling {
	return &Rolling{clients: clients, hooks: hooks, out: out, params: params, minReadySeconds: minReadySeconds, first: first}
}

// WithUntil returns a copy that stops where until says, with strategies.ErrUntilReached:
// after the pre hook, or once until.Target(desired) new pods are available (for 100%:
// after the rollout, before the post hook). A mid stage is invalid: Rolling has none.
func (r *Rolling) WithUntil(until strategies.Until) *Rolling {
	c := *r
	c.until = until
	return &c
}

// WithOlder returns a copy that rolls from older (oldest first) as well as from From:
// the older revisions that still serve (a superseded canary, a frozen revision). Their
// pods count as old pods, and they are scaled down with From, never all at once before
// the new pods are available (DESIGN §4 invariant 10). With no From, the newest of them
// is rolled from; the first rollout is one with neither.
func (r *Rolling) WithOlder(older []*appsv1.ReplicaSet) *Rolling {
	c := *r
	c.older = older
	return &c
}

// Deploy runs pre hook → the steps, if any (see runSteps) → the surge/unavailable loop →
// post hook. The first revision
// (from == nil) is deployed by the FirstRollout strategy given to New. Run again after a partial
// run, it continues from the replicas it finds; a hook that already succeeded for the
// revision is not run again.
func (r *Rolling) Deploy(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error {
	timeout := revision.TimeoutFrom(r.params.TimeoutSeconds)
	if r.until.Stage == strategies.StageMid {
		return strategies.Invalidf("--until=mid: the Rolling strategy has no mid hook; use pre or a percentage")
	}
	old := newOldSet(from, r.older)
	if old == nil {
		if r.first == nil {
			return fmt.Errorf("deploying the first revision %s: the Rolling strategy was built without a first-rollout strategy", to.Name)
		}
		return r.first(r.params, r.until).Deploy(ctx, nil, to, desired)
	}
	surge, unavailable, err := Fenceposts(r.params.MaxSurge, r.params.MaxUnavailable, desired)
	if err != nil {
		return strategies.Invalidf("spec.strategy.rollingParams of %s: %v; fix maxSurge or maxUnavailable", to.Name, err)
	}
	if err := r.hooks.Run(ctx, strategies.StagePre, r.params.Pre); err != nil {
		return fmt.Errorf("running the pre hook of %s: %w", to.Name, err)
	}
	if err := r.until.AfterHook(strategies.StagePre, to.Name); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the watch
	l := &loop{
		r: r, old: old, new: to, timeout: timeout, target: desired,
		state: State{Desired: desired, MaxSurge: surge, MaxUnavailable: unavailable},
	}
	r.out.Printf("Rolling %s to %s: %d pods, maxSurge %d, maxUnavailable %d", old.names(), to.Name, desired, surge, unavailable)
	if err := l.start(ctx); err != nil {
		return err
	}
	if err := l.runSteps(ctx); err != nil {
		return err
	}
	l.target, l.stepping = desired, false
	if err := l.run(ctx); err != nil {
		return err
	}
	if err := r.until.AtPercent(to.Name, l.state.NewAvailable, desired); err != nil {
		return err
	}
	if err := r.hooks.Run(ctx, strategies.StagePost, r.params.Post); err != nil {
		return fmt.Errorf("running the post hook of %s: %w", to.Name, err)
	}
	return nil
}

// loop is one run of the surge/unavailable loop.
type loop struct {
	r       *Rolling
	tracker *strategies.PodTracker
	old     *oldSet
	new     *appsv1.ReplicaSet
	timeout time.Duration
	state   State
	recheck time.Duration
	// progressBy is the progress deadline; it moves whenever the rollout makes progress.
	progressBy time.Time
	bestNew    int32
	// target is the new revision's replicas at the end of this run of the loop: desired,
	// or a setReplicas step's count while stepping is true (see StepReached).
	target   int32
	stepping bool
}

// start opens the pod watch. While it fills its cache, the first step already goes out
// when both revisions are at rest (see settledState): the watch of a revision of many
// pods takes a while to fill, and the Deployment controller would have taken that step
// from the same ReplicaSet statuses.
func (l *loop) start(ctx context.Context) error {
	type started struct {
		tracker *strategies.PodTracker
		err     error
	}
	ready := make(chan started, 1)
	go func() {
		t, err := strategies.StartPodTracker(ctx, l.r.clients, strategies.PodWatchSelector(l.new))
		ready <- started{t, err}
	}()
	var stepErr error
	if state, ok := settledState(l.state, l.old, l.new); ok && len(l.r.params.Steps) == 0 && l.r.until.Target(l.state.Desired) == l.state.Desired &&
		l.r.params.IntervalSeconds == nil && l.r.params.UpdatePeriodSeconds == nil {
		l.state = state
		_, stepErr = l.step(ctx, 0)
	}
	s := <-ready
	if err := errors.Join(stepErr, s.err); err != nil {
		return err
	}
	l.tracker = s.tracker
	return nil
}

// settledState is the loop's state read from the revisions' ReplicaSet statuses, when
// all are at rest (see settledRS). ok is false otherwise; the loop then waits for the pod
// watch before its first step.
func settledState(s State, old *oldSet, new *appsv1.ReplicaSet) (State, bool) {
	oldAvailable, ok := old.settled()
	if !ok || !settledRS(new) {
		return s, false
	}
	s.OldReplicas, s.NewReplicas = old.replicas(), strategies.Replicas(new)
	s.OldAvailable, s.NewAvailable = oldAvailable, new.Status.AvailableReplicas
	return s, true
}

// settledRS reports whether rs is at rest: the ReplicaSet controller has seen its current
// spec, and every pod it counts is ready and available (minReadySeconds included).
func settledRS(rs *appsv1.ReplicaSet) bool {
	st, want := rs.Status, strategies.Replicas(rs)
	return st.ObservedGeneration >= rs.Generation && st.Replicas == want &&
		st.ReadyReplicas == want && st.AvailableReplicas == want
}

func (l *loop) run(ctx context.Context) error {
	// Both default to 0: event-driven, as the Deployment controller is. Explicit values
	// (OpenShift's 1 s, say) are honoured.
	interval := seconds(l.r.params.IntervalSeconds, 0)
	period := seconds(l.r.params.UpdatePeriodSeconds, 0)
	l.progressBy = time.Now().Add(l.timeout)
	var lastCheck time.Time
	for {
		// intervalSeconds is the shortest gap between two progress checks.
		if err := sleep(ctx, interval-time.Since(lastCheck)); err != nil {
			return err
		}
		lastCheck = time.Now()
		if err := l.observe(lastCheck); err != nil {
			return err
		}
		if l.stepping && StepReached(l.state, l.target) {
			return nil
		}
		if !l.stepping && Done(l.state) {
			return l.waitOldGone(ctx)
		}
		if target := l.r.until.Target(l.state.Desired); !l.stepping && target < l.state.Desired && l.state.NewAvailable >= target {
			return nil // --until=N%: Deploy stops here
		}
		scaled, err := l.step(ctx, period)
		if err != nil {
			return err
		}
		if !scaled {
			if err := l.waitChange(ctx); err != nil {
				return err
			}
		}
	}
}

// observe reads the counts; more new pods available than ever before is progress. A pod
// of the new revision that cannot start ends the rollout with a *strategies.PodStuckError
// (see strategies.StuckPod); the old revisions' pods never do.
func (l *loop) observe(now time.Time) error {
	oldAvailable, oldRecheck, err := l.old.count(l.tracker, l.r.minReadySeconds, now)
	if err != nil {
		return err
	}
	newPods, err := l.tracker.PodsOf(l.new)
	if err != nil {
		return err
	}
	stuck, stuckRecheck := strategies.StuckPod(l.new.Name, newPods, now)
	if stuck != nil {
		return stuck
	}
	newCounts := strategies.CountPods(newPods, l.r.minReadySeconds, now)
	l.state.OldReplicas, l.state.NewReplicas = l.old.replicas(), strategies.Replicas(l.new)
	l.state.OldAvailable, l.state.NewAvailable = oldAvailable, newCounts.Available
	l.recheck = min(nonZero(oldRecheck), nonZero(newCounts.Recheck), nonZero(stuckRecheck))
	if l.state.NewAvailable > l.bestNew {
		l.bestNew = l.state.NewAvailable
		l.progressBy = now.Add(l.timeout)
	}
	return nil
}

// step scales the new revision up and the old one down in the same step, as far as the
// state allows (as the Deployment controller does), the two requests at once, then
// pauses updatePeriodSeconds when it is set. It reports whether it scaled anything.
func (l *loop) step(ctx context.Context, period time.Duration) (bool, error) {
	next := l.state
	next.NewReplicas = StepScaleUp(next, l.target)
	next.OldReplicas = StepScaleDown(next, l.target)
	scaleUp, scaleOld := next.NewReplicas != l.state.NewReplicas, next.OldReplicas != l.state.OldReplicas
	if !scaleUp && !scaleOld {
		return false, nil
	}
	var upErr, downErr error
	var wg sync.WaitGroup
	if scaleUp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rs *appsv1.ReplicaSet
			if rs, upErr = strategies.Scale(ctx, l.r.clients, l.r.out, l.new, next.NewReplicas); upErr == nil {
				l.new = rs
			}
		}()
	}
	if scaleOld {
		if downErr = l.old.scale(ctx, l.r.clients, l.r.out, next.OldReplicas); downErr == nil && next.OldReplicas < l.state.OldReplicas {
			l.progressBy = time.Now().Add(l.timeout) // scaling old down is progress
		}
	}
	wg.Wait()
	if err := errors.Join(upErr, downErr); err != nil {
		return false, err
	}
	l.state.NewReplicas, l.state.OldReplicas = next.NewReplicas, next.OldReplicas
	if period > 0 {
		l.r.out.Printf("Pausing %s after this step (updatePeriodSeconds)", period)
		if err := sleep(ctx, period); err != nil {
			return false, err
		}
	}
	return true, nil
}

// waitChange blocks until a pod changes, a Ready pod may have become available, a new
// pod's stuck container may have run out of grace, or the progress deadline passes.
func (l *loop) waitChange(ctx context.Context) error {
	deadline := time.NewTimer(time.Until(l.progressBy))
	defer deadline.Stop()
	var again <-chan time.Time
	if l.recheck > 0 && l.recheck < time.Hour {
		t := time.NewTimer(l.recheck)
		defer t.Stop()
		again = t.C
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("rolling %s to %s: %w: %w", l.old.names(), l.new.Name, strategies.ErrCancelled, ctx.Err())
	case <-deadline.C:
		return &strategies.TimeoutError{
			Revision:   l.new.Name,
			WaitingFor: fmt.Sprintf("progress toward %d available pods", l.target),
			Seen: fmt.Sprintf("%s: %d available of %d replicas; %s: %d available of %d replicas",
				l.new.Name, l.state.NewAvailable, l.state.NewReplicas, l.old.names(), l.state.OldAvailable, l.state.OldReplicas),
			Selector: strategies.SelectorString(l.new),
			Timeout:  l.timeout,
		}
	case <-l.tracker.Changed():
	case <-again:
	}
	return nil
}

// waitOldGone waits, within the progress deadline, until no pod of the old revision is
// active, as the Deployment controller counts them. Before a post hook it waits until
// the old pods are gone, so that the hook never runs beside the old code.
func (l *loop) waitOldGone(ctx context.Context) error {
	s := &strategies.Scaler{Clients: l.r.clients, Tracker: l.tracker, Out: l.r.out, MinReadySeconds: l.r.minReadySeconds}
	timeout := max(time.Until(l.progressBy), time.Millisecond)
	return l.old.wait(timeout, func(rs *appsv1.ReplicaSet, timeout time.Duration) error {
		if l.r.params.Post != nil {
			return s.WaitGone(ctx, rs, timeout)
		}
		return s.WaitInactive(ctx, rs, timeout)
	})
}

func seconds(v *int64, def int64) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}

func nonZero(d time.Duration) time.Duration {
	if d == 0 {
		return time.Hour
	}
	return d
}

// sleep waits d (nothing when d ≤ 0), or returns ErrCancelled when ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", strategies.ErrCancelled, ctx.Err())
	case <-t.C:
		return nil
	}
}
