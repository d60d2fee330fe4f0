package recreate

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
)

// Recreate stops every old pod before it starts the new ones. Build it with New.
type Recreate struct {
	clients strategies.Clients
	hooks   strategies.HookRunner
	out     *strategies.Progress
	params  v1alpha1.RecreateDeploymentStrategyParams
	// minReadySeconds is how long a new pod must be Ready to count as available.
	minReadySeconds int32
	// mid is false when Recreate runs as the first rollout of the Rolling strategy, which
	// has no mid hook.
	mid bool
	// until stops the rollout early (stagehand-deployer --until).
	until strategies.Until
	// older are the revisions older than To, other than From, that still have replicas.
	older []*appsv1.ReplicaSet
}

var _ strategies.Strategy = &Recreate{}

// New returns the Recreate strategy with the defaulted params. hooks runs the pre, mid
// and post hooks; out receives progress lines.
func New(clients strategies.Clients, hooks strategies.HookRunner, out *strategies.Progress,
	params v1alpha1.RecreateDeploymentStrategyParams, minReadySeconds int32) *Recreate {
	return &Recreate{clients: clients, hooks: hooks, out: out, params: params, minReadySeconds: minReadySeconds, mid: true}
}

// WithoutMidHook returns a copy that skips the mid hook stage: the Rolling strategy's
// first rollout, which has no old revision.
func (r *Recreate) WithoutMidHook() *Recreate {
	c := *r
	c.mid = false
	return &c
}

// FirstRollout returns the first-rollout strategy of Rolling (a rolling.FirstRollout): for
// the Rolling params, Recreate with their timeoutSeconds and pre and post hooks, without
// the mid hook, stopping where until says.
func FirstRollout(clients strategies.Clients, hooks strategies.HookRunner, out *strategies.Progress,
	minReadySeconds int32) func(v1alpha1.RollingDeploymentStrategyParams, strategies.Until) strategies.Strategy {
	return func(params v1alpha1.RollingDeploymentStrategyParams, until strategies.Until) strategies.Strategy {
		recreate := New(clients, hooks, out, v1alpha1.RecreateDeploymentStrategyParams{
			TimeoutSeconds: params.TimeoutSeconds, Pre: params.Pre, Post: params.Post,
		}, minReadySeconds)
		return recreate.WithoutMidHook().WithUntil(until)
	}
}

// WithUntil returns a copy that stops where until says, with strategies.ErrUntilReached:
// after the pre or mid hook, or once until.Target(desired) new pods are available (for
// 100%: after the rollout, before the post hook).
func (r *Recreate) WithUntil(until strategies.Until) *Recreate {
	c := *r
	c.until = until
	return &c
}

// WithOlder returns a copy that stops older (the revisions other than From that still
// have replicas: a superseded canary, a frozen revision) with From, after the pre hook,
// so that they serve until the strategy stops the old pods.
func (r *Recreate) WithOlder(older []*appsv1.ReplicaSet) *Recreate {
	c := *r
	c.older = older
	return &c
}

// Deploy runs pre hook → scale from (and the older revisions) to 0 and wait until its pods have stopped → mid hook →
// scale to up to desired and wait until all desired pods are available → post hook.
// timeoutSeconds bounds each wait. Run again after a partial run (--until, a deployer
// that died), it continues: scaling to the current replicas is a no-op, and a hook that
// already succeeded for the revision is not run again.
func (r *Recreate) Deploy(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the watch
	tracker, err := strategies.StartPodTracker(ctx, r.clients, strategies.PodWatchSelector(to))
	if err != nil {
		return err
	}
	scaler := &strategies.Scaler{Clients: r.clients, Tracker: tracker, Out: r.out, MinReadySeconds: r.minReadySeconds}
	timeout := revision.TimeoutFrom(r.params.TimeoutSeconds)

	if err := r.hooks.Run(ctx, strategies.StagePre, r.params.Pre); err != nil {
		return fmt.Errorf("running the pre hook of %s: %w", to.Name, err)
	}
	if err := r.until.AfterHook(strategies.StagePre, to.Name); err != nil {
		return err
	}
	// Like the Deployment controller's Recreate, go on once no old pod may still run
	// (each finished, or gone), not once every old pod object is deleted: the two
	// revisions never run at once, and the kubelet's removal of finished pods is not on
	// the rollout's path.
	stopped, err := r.stopOld(ctx, scaler, from, timeout)
	if err != nil {
		return err
	}
	if r.mid {
		if err := r.hooks.Run(ctx, strategies.StageMid, r.params.Mid); err != nil {
			return fmt.Errorf("running the mid hook of %s: %w", to.Name, err)
		}
		if err := r.until.AfterHook(strategies.StageMid, to.Name); err != nil {
			return err
		}
	}
	target := r.until.Target(desired)
	scaled, err := strategies.Scale(ctx, r.clients, r.out, to, target)
	if err != nil {
		return err
	}
	if err := scaler.WaitAvailable(ctx, scaled, target, timeout, stopped...); err != nil {
		return err
	}
	if err := r.until.AtPercent(to.Name, target, desired); err != nil {
		return err
	}
	if err := r.hooks.Run(ctx, strategies.StagePost, r.params.Post); err != nil {
		return fmt.Errorf("running the post hook of %s: %w", to.Name, err)
	}
	return nil
}

// stopOld scales from and the older revisions to 0 and waits until none of their pods
// may still run, within timeout. It returns the revisions it stopped.
func (r *Recreate) stopOld(ctx context.Context, scaler *strategies.Scaler, from *appsv1.ReplicaSet, timeout time.Duration) ([]*appsv1.ReplicaSet, error) {
	var old []*appsv1.ReplicaSet
	for _, rs := range append(slices.Clone(r.older), from) {
		if rs == nil || (from != nil && rs != from && rs.Name == from.Name) {
			continue
		}
		scaled, err := strategies.Scale(ctx, r.clients, r.out, rs, 0)
		if err != nil {
			return nil, err
		}
		old = append(old, scaled)
	}
	end := time.Now().Add(timeout)
	for _, rs := range old {
		if err := scaler.WaitStopped(ctx, rs, max(time.Until(end), time.Millisecond)); err != nil {
			return nil, err
		}
	}
	return old, nil
}
