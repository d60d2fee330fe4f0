package rolling

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/strategies"
)

// oldSet is the old side of a rollout: the revision rolled from (From, the newest Complete
// one) and every other older revision that still has replicas: a superseded canary, a
// frozen revision, a failed one that still serves. DESIGN §4 invariant 10: a rollout rolls
// from every pod that serves, whichever revision it belongs to, so the loop counts them
// all as old and scales them down together, never to 0 before the new pods are available.
type oldSet struct {
	// rss are the revisions in the order they are drained: the others oldest first, and
	// From last. From is the one a step raises (see StepScaleDown).
	rss []*appsv1.ReplicaSet
	// avail is each revision's available pods, capped at its replicas, at the last count.
	avail []int32
}

// newOldSet returns the old side of a rollout from from and others (oldest first). When
// from is nil, the newest of others plays its part. It is nil when there is no old
// revision at all: the first rollout.
func newOldSet(from *appsv1.ReplicaSet, others []*appsv1.ReplicaSet) *oldSet {
	var rss []*appsv1.ReplicaSet
	for _, rs := range others {
		if rs != nil && (from == nil || rs.Name != from.Name) {
			rss = append(rss, rs)
		}
	}
	if from != nil {
		rss = append(rss, from)
	}
	if len(rss) == 0 {
		return nil
	}
	return &oldSet{rss: rss, avail: make([]int32, len(rss))}
}

// from is the revision the rollout is said to roll from: From, or the newest other.
func (o *oldSet) from() *appsv1.ReplicaSet { return o.rss[len(o.rss)-1] }

// replicas is the sum of the revisions' spec.replicas.
func (o *oldSet) replicas() int32 {
	var n int32
	for _, rs := range o.rss {
		n += strategies.Replicas(rs)
	}
	return n
}

// names lists the revisions for messages, From last.
func (o *oldSet) names() string {
	names := make([]string, len(o.rss))
	for i, rs := range o.rss {
		names[i] = rs.Name
	}
	return strings.Join(names, "+")
}

// count counts the available pods of every revision at now and returns their sum and
// the soonest recheck (0 when none waits). Pods above a revision's replicas are about to
// be deleted and do not count.
func (o *oldSet) count(tracker *strategies.PodTracker, minReadySeconds int32, now time.Time) (int32, time.Duration, error) {
	var total int32
	var recheck time.Duration
	for i, rs := range o.rss {
		c, err := tracker.Count(rs, minReadySeconds, now)
		if err != nil {
			return 0, 0, err
		}
		o.avail[i] = min(c.Available, strategies.Replicas(rs))
		total += o.avail[i]
		if c.Recheck > 0 && (recheck == 0 || c.Recheck < recheck) {
			recheck = c.Recheck
		}
	}
	return total, recheck, nil
}

// plan spreads total replicas over the revisions. Lowering, it first removes replicas
// that are not available (as the ReplicaSet controller deletes those pods first), then
// available ones, each pass in drain order (From last). Raising, it adds to From only.
func (o *oldSet) plan(total int32) []int32 {
	want := make([]int32, len(o.rss))
	for i, rs := range o.rss {
		want[i] = strategies.Replicas(rs)
	}
	current := o.replicas()
	if total >= current {
		want[len(want)-1] += total - current
		return want
	}
	remove := current - total
	for pass := 0; pass < 2 && remove > 0; pass++ {
		for i := range want {
			spare := want[i] // the second pass may take every replica
			if pass == 0 {
				spare = max(0, want[i]-o.avail[i]) // the first only unavailable ones
			}
			take := min(spare, remove)
			want[i] -= take
			remove -= take
		}
	}
	return want
}

// scale brings the revisions to total replicas in all (see plan), lowering before it
// raises so that the sum never passes the higher of the old and new totals.
func (o *oldSet) scale(ctx context.Context, clients strategies.Clients, out *strategies.Progress, total int32) error {
	want := o.plan(total)
	for _, lowering := range []bool{true, false} {
		for i, rs := range o.rss {
			if (want[i] < strategies.Replicas(rs)) != lowering || want[i] == strategies.Replicas(rs) {
				continue
			}
			scaled, err := strategies.Scale(ctx, clients, out, rs, want[i])
			if err != nil {
				return err
			}
			o.rss[i] = scaled
		}
	}
	return nil
}

// settled reports whether every revision is at rest (see settledRS), with the sum of
// their available pods, which it records as count does.
func (o *oldSet) settled() (available int32, ok bool) {
	for _, rs := range o.rss {
		if !settledRS(rs) {
			return 0, false
		}
	}
	for i, rs := range o.rss {
		o.avail[i] = rs.Status.AvailableReplicas
		available += o.avail[i]
	}
	return available, true
}

// wait runs wait on each revision in turn, within the one timeout.
func (o *oldSet) wait(timeout time.Duration, wait func(rs *appsv1.ReplicaSet, timeout time.Duration) error) error {
	end := time.Now().Add(timeout)
	for _, rs := range o.rss {
		if err := wait(rs, max(time.Until(end), time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}
