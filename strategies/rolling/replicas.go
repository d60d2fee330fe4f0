package rolling

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fenceposts resolves maxSurge and maxUnavailable against desired: surge rounds up,
// unavailable rounds down. When both are 0 the rollout could never move, so unavailable
// becomes 1, as Kubernetes does. Unavailable never exceeds desired.
func Fenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if s < 0 || u < 0 {
		return 0, 0, fmt.Errorf("maxSurge %d and maxUnavailable %d must not be negative", s, u)
	}
	surge, unavailable = int32(s), int32(u)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	if unavailable > desired {
		unavailable = desired
	}
	return surge, unavailable, nil
}

// State is what one step of the rolling loop looks at: spec replicas of the old and new
// revisions and their available pods.
type State struct {
	Desired        int32
	MaxSurge       int32
	MaxUnavailable int32
	OldReplicas    int32
	NewReplicas    int32
	OldAvailable   int32
	NewAvailable   int32
}

// ScaleUpTarget is the replicas of the new revision for this step: as many as keep
// old + new replicas within desired + maxSurge, at most desired, and never fewer than it
// already has.
func ScaleUpTarget(s State) int32 {
	target := s.Desired + s.MaxSurge - s.OldReplicas
	if target > s.Desired {
		target = s.Desired
	}
	if target < s.NewReplicas {
		target = s.NewReplicas
	}
	return target
}

// ScaleDownTarget is the replicas of the old revision for this step. It first removes old
// replicas that are not available (the ReplicaSet controller deletes those pods first),
// then as many available ones as keep available pods at desired − maxUnavailable or more.
// Available pods above a revision's replicas are about to be deleted and do not count.
func ScaleDownTarget(s State) int32 {
	minAvailable := s.Desired - s.MaxUnavailable
	oldAvailable := min(s.OldAvailable, s.OldReplicas)
	newAvailable := min(s.NewAvailable, s.NewReplicas)
	unhealthy := s.OldReplicas - oldAvailable
	spare := max(0, newAvailable+oldAvailable-minAvailable)
	remove := min(s.OldReplicas, unhealthy+spare)
	return s.OldReplicas - remove
}

// Done reports whether the rollout is over: the new revision has desired available pods
// and the old one has no replicas.
func Done(s State) bool {
	return s.OldReplicas == 0 && s.NewReplicas == s.Desired && s.NewAvailable >= s.Desired
}

// StepScaleUp is ScaleUpTarget capped at target, the new revision's replicas at the end
// of a setReplicas step (desired outside the steps). It never lowers the new revision.
func StepScaleUp(s State, target int32) int32 {
	return max(min(ScaleUpTarget(s), target), s.NewReplicas)
}

// StepScaleDown is ScaleDownTarget, but the old revisions keep desired − target replicas
// (desired − the new revision's replicas, when it has more than target): a step moves
// replicas from old to new without ever going below desired in all. When the old
// revisions have fewer (a rollout that started below desired: a frozen revision, a
// superseded canary), a step raises them to it, so that every step and pause holds
// desired replicas. At target = desired there is no floor, and it is ScaleDownTarget.
func StepScaleDown(s State, target int32) int32 {
	floor := max(0, s.Desired-max(target, s.NewReplicas))
	return max(ScaleDownTarget(s), floor)
}

// StepReached reports whether a setReplicas step is over: the new revision has target
// replicas (or more), target of them available, and the old revision is down to what
// StepScaleDown keeps.
func StepReached(s State, target int32) bool {
	return s.NewReplicas >= target && s.NewAvailable >= target && s.OldReplicas <= max(0, s.Desired-max(target, s.NewReplicas))
}
