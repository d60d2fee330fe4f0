package deferstep

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Name is the deterministic name of the pod of step i (0-based), attempt attempt (from
// 1), of a run of when for pod. It carries the pod's UID, so that a pod of the same name
// created later (a StatefulSet's) never meets the old pod's steps. A run while the pod
// still runs (BeforeScaleDown, BeforeEviction) ends in "-b": the AfterTermination run
// that may follow on the same pod must not find that run's finished step pods under its
// own names and take them for its own.
func Name(pod *corev1.Pod, when v1alpha1.DeferWhen, i, attempt int) string {
	base := pod.Name
	if len(base) > 200 {
		base = base[:200]
	}
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	name := fmt.Sprintf("%s-defer-%s-%d-%d", base, uid, i+1, attempt)
	if when.BeforeStop() {
		name += "-b"
	}
	return name
}

// Selector selects the step pods of pod, of every step and attempt, by the pod's UID
// (the label stagehand.dev/defer-step-of that Build sets): for a lister, or, as its
// String(), for a List call's label selector.
func Selector(pod *corev1.Pod) labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.DeferStepOfLabel: string(pod.UID)})
}
