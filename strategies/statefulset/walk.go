// Package statefulset is the walk of a StatefulSet revision (docs/statefulsets.md): the
// deployer lowers the StatefulSet's rollingUpdate partition, highest ordinal first, a step
// at a time, and each step waits until the pods it moved run the new template and are
// available. This file is the walk's arithmetic, free of clients, so that its table tests
// pin every case.
package statefulset

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// HoldPartition is the partition under which no pod of any ordinal moves: the controller
// writes it with a new template, and the walk lowers it from there.
const HoldPartition int32 = 1<<31 - 1

// Step is how many ordinals one step of the walk may take down at once: maxUnavailable
// resolved against replicas, rounding down (as the Rolling floor does), and at least 1, so
// that a walk always moves. A nil maxUnavailable means 1, the StatefulSet's own default.
func Step(maxUnavailable *intstr.IntOrString, replicas int32) (int32, error) {
	if maxUnavailable == nil {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(replicas), false)
	if err != nil {
		return 0, fmt.Errorf("rollingParams.maxUnavailable %q: %w", maxUnavailable.String(), err)
	}
	if n < 1 {
		return 1, nil
	}
	return int32(n), nil
}

// Ordinal is the pod's StatefulSet ordinal: its apps.kubernetes.io/pod-index label, else
// the number after the last dash of its name. ok is false for a pod that has neither.
func Ordinal(pod *corev1.Pod) (ordinal int32, ok bool) {
	s := pod.Labels[appsv1.PodIndexLabel]
	if s == "" {
		i := strings.LastIndexByte(pod.Name, '-')
		if i < 0 {
			return 0, false
		}
		s = pod.Name[i+1:]
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil && n >= 0
}

// Walk is what one decision of the walk reads: the StatefulSet's replicas and current
// partition, the pods by ordinal, and the template the walk moves them to.
type Walk struct {
	// Replicas is the StatefulSet's spec.replicas.
	Replicas int32
	// Partition is its rollingUpdate partition now; HoldPartition or more means none moved.
	Partition int32
	// Want is how many of the highest ordinals end on the new template: Replicas for a whole
	// rollout, k for a canary step setReplicas: k.
	Want int32
	// Step is how many ordinals may be unavailable at once (Step()).
	Step int32
	// Hash is the new template's controller-revision-hash.
	Hash string
	// MinReadySeconds is the DC's; a pod counts as available after that long Ready.
	MinReadySeconds int32
	// Pods are the StatefulSet's pods, any order; pods being deleted count as unavailable.
	Pods []*corev1.Pod
}

// Decision is what the walk does next.
type Decision struct {
	// Partition is the partition to write; equal to Walk.Partition when nothing changes.
	Partition int32
	// Done is true when the Want highest ordinals run the new template and are available.
	Done bool
	// Waiting says what the walk waits for when it neither moves nor is done, for the
	// deployer's progress line ("db-2 to be available on 6d9f...").
	Waiting string
	// Recheck is when to look again without an event: a pod that becomes available only
	// after minReadySeconds sends none.
	Recheck time.Duration
}

// Next decides the walk's next move at now. It never lowers the partition while an
// ordinal at or above it has not moved, and never takes down more ordinals than the step
// allows on top of those already unavailable, whatever their template: the Rolling floor
// desired − maxUnavailable holds through the walk.
func (w Walk) Next(now time.Time) Decision {
	target := w.Replicas - w.Want
	if target < 0 {
		target = 0
	}
	partition := w.Partition
	if partition > w.Replicas {
		partition = w.Replicas
	}
	byOrdinal := map[int32]*corev1.Pod{}
	for _, p := range w.Pods {
		if o, ok := Ordinal(p); ok && o < w.Replicas {
			byOrdinal[o] = p
		}
	}
	var recheck time.Duration
	available := func(o int32) bool {
		p := byOrdinal[o]
		if p == nil || p.DeletionTimestamp != nil {
			return false
		}
		ok, again := podstatus.PodAvailable(p, w.MinReadySeconds, now)
		if !ok && again > 0 && (recheck == 0 || again < recheck) {
			recheck = again
		}
		return ok
	}
	// Every ordinal the partition already lets move must run the new template and be
	// available before the next step.
	for o := w.Replicas - 1; o >= partition; o-- {
		p := byOrdinal[o]
		switch {
		case p == nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] != w.Hash:
			return Decision{Partition: w.Partition, Waiting: fmt.Sprintf("ordinal %d to run the new template", o)}
		case !available(o):
			return Decision{Partition: w.Partition, Waiting: fmt.Sprintf("%s to be available", p.Name), Recheck: recheck}
		}
	}
	if partition <= target {
		return Decision{Partition: w.Partition, Done: true}
	}
	unavailable := int32(0)
	for o := int32(0); o < partition; o++ {
		if !available(o) {
			unavailable++
		}
	}
	budget := w.Step - unavailable
	if budget <= 0 {
		return Decision{Partition: w.Partition, Recheck: recheck,
			Waiting: fmt.Sprintf("%d pod(s) below ordinal %d to be available (maxUnavailable %d)", unavailable, partition, w.Step)}
	}
	next := partition - budget
	if next < target {
		next = target
	}
	return Decision{Partition: next}
}
