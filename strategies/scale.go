package strategies

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// Scaler scales revisions and waits for their pods, on the watches of one PodTracker.
// The built-in strategies are built on it, and custom strategies may use it directly.
type Scaler struct {
	Clients Clients
	Tracker *PodTracker
	Out     *Progress
	// MinReadySeconds is how long a pod must be Ready to count as available.
	MinReadySeconds int32
}

// WaitGone waits until no pod object of rs is left: not even a terminating one.
func (s *Scaler) WaitGone(ctx context.Context, rs *appsv1.ReplicaSet, timeout time.Duration) error {
	what := "every pod to be gone"
	s.Out.Printf("Waiting for the pods of %s to be gone", rs.Name)
	w := Wait{Revision: rs.Name, WaitingFor: what, Selector: SelectorString(rs), Timeout: timeout}
	return s.Tracker.Until(ctx, w, func(now time.Time) (bool, time.Duration, string, error) {
		c, err := s.Tracker.Count(rs, s.MinReadySeconds, now)
		if err != nil {
			return false, 0, "", err
		}
		return c.Pods == 0, 0, fmt.Sprintf("%d pods left, %d of them terminating", c.Pods, c.Pods-c.Active), nil
	})
}

// WaitStopped waits until no pod of rs may still run a container: each one has finished
// (phase Succeeded or Failed, as the kubelet sets it once a deleted pod's containers have
// stopped) or is gone, and none waits for DeferPolicy steps. That is when the Deployment
// controller's Recreate goes on; the pod objects may still be there.
func (s *Scaler) WaitStopped(ctx context.Context, rs *appsv1.ReplicaSet, timeout time.Duration) error {
	s.Out.Printf("Waiting for the pods of %s to stop", rs.Name)
	w := Wait{Revision: rs.Name, WaitingFor: "every pod to stop", Selector: SelectorString(rs), Timeout: timeout}
	return s.Tracker.Until(ctx, w, func(now time.Time) (bool, time.Duration, string, error) {
		c, err := s.Tracker.Count(rs, s.MinReadySeconds, now)
		if err != nil {
			return false, 0, "", err
		}
		return c.Running == 0, 0, fmt.Sprintf("%d pods may still run, %d pod objects left", c.Running, c.Pods), nil
	})
}

// WaitInactive waits until no pod of rs is active: each is terminating, finished or gone.
// That is when the Deployment controller stops counting a pod (status.replicas counts
// only active pods).
func (s *Scaler) WaitInactive(ctx context.Context, rs *appsv1.ReplicaSet, timeout time.Duration) error {
	w := Wait{Revision: rs.Name, WaitingFor: "no pod to be active", Selector: SelectorString(rs), Timeout: timeout}
	return s.Tracker.Until(ctx, w, func(now time.Time) (bool, time.Duration, string, error) {
		c, err := s.Tracker.Count(rs, s.MinReadySeconds, now)
		if err != nil {
			return false, 0, "", err
		}
		return c.Active == 0, 0, fmt.Sprintf("%d active pods left", c.Active), nil
	})
}

// WaitAvailable waits until rs has exactly desired pods that are all available, and no
// pod of stopped (other revisions) may still run (see WaitStopped). It returns a
// *PodStuckError as soon as a pod of rs cannot start (see StuckPod); pods of stopped
// never fail it.
func (s *Scaler) WaitAvailable(ctx context.Context, rs *appsv1.ReplicaSet, desired int32, timeout time.Duration, stopped ...*appsv1.ReplicaSet) error {
	what := fmt.Sprintf("%d pods to be available", desired)
	s.Out.Printf("Waiting for %d pods of %s to be available", desired, rs.Name)
	w := Wait{Revision: rs.Name, WaitingFor: what, Selector: SelectorString(rs), Timeout: timeout}
	return s.Tracker.Until(ctx, w, func(now time.Time) (bool, time.Duration, string, error) {
		pods, err := s.Tracker.PodsOf(rs)
		if err != nil {
			return false, 0, "", err
		}
		stuck, stuckRecheck := StuckPod(rs.Name, pods, now)
		if stuck != nil {
			return false, 0, "", stuck
		}
		c := CountPods(pods, s.MinReadySeconds, now)
		var left int32
		for _, old := range stopped {
			o, err := s.Tracker.Count(old, 0, now)
			if err != nil {
				return false, 0, "", err
			}
			left += o.Running
		}
		seen := fmt.Sprintf("%d of %d available, %d active pods", c.Available, desired, c.Active)
		if left > 0 {
			seen += fmt.Sprintf(", %d pods of older revisions may still run", left)
		}
		return c.Available == desired && c.Active == desired && left == 0, sooner(c.Recheck, stuckRecheck), seen, nil
	})
}

// ScaleAndWait scales rs to replicas. Then it waits until the pods are gone (for 0) or
// all available, within timeout (0: no timeout), and fails with a *PodStuckError when a
// pod of rs cannot start (see WaitAvailable). It returns rs as scaled.
func (s *Scaler) ScaleAndWait(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, timeout time.Duration) (*appsv1.ReplicaSet, error) {
	scaled, err := Scale(ctx, s.Clients, s.Out, rs, replicas)
	if err != nil {
		return nil, err
	}
	if replicas == 0 {
		err = s.WaitGone(ctx, scaled, timeout)
	} else {
		err = s.WaitAvailable(ctx, scaled, replicas, timeout)
	}
	if err != nil {
		return nil, err
	}
	return scaled, nil
}
