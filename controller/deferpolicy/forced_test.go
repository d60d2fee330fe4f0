package deferpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The controller learns the grace period a deletion started with, and whether the
// containers still ran then, from the pod's update events (podChanged); forced reads it
// back. Only a user's forced deletion of a pod whose containers still run is forced
// (DESIGN.md §4 invariant 8): the apiserver deletes every Succeeded or Failed pod at 0,
// and a kubelet deletes every stopped pod again at 0.
func TestForcedTellsAForcedDeletionFromTheKubeletsFinalDelete(t *testing.T) {
	running := runningPod()
	stopped := ended(runningPod(), corev1.PodSucceeded)
	failed := ended(runningPod(), corev1.PodFailed)
	noGrace := runningPod()
	noGrace.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	for _, tc := range []struct {
		name string
		// seen are the pod's states as the informer delivers them, in order; the last
		// one is what forced looks at. A nil first state is an add event.
		seen []*corev1.Pod
		want bool
	}{
		{"deleted at 0 while running, seen so from the start, stopped since", []*corev1.Pod{running, deleting(running, 0), deleting(stopped, 0)}, true},
		{"a Succeeded pod deleted plainly (the apiserver sets 0)", []*corev1.Pod{stopped, deleting(stopped, 0)}, false},
		{"a Failed pod deleted plainly (the apiserver sets 0)", []*corev1.Pod{failed, deleting(failed, 0)}, false},
		{"a Succeeded pod, first seen already deleted", []*corev1.Pod{nil, deleting(stopped, 0)}, false},
		{"terminationGracePeriodSeconds 0, deleted plainly while running", []*corev1.Pod{noGrace, deleting(noGrace, 0)}, false},
		{"at 0 while the containers still run, first seen unknown", []*corev1.Pod{nil, deleting(running, 0)}, true},
		{"at 0 while the containers still run, first seen graceful", []*corev1.Pod{running, deleting(running, 30), deleting(running, 0)}, true},
		{"at 0 once stopped, first seen graceful", []*corev1.Pod{running, deleting(running, 30), deleting(stopped, 0)}, false},
		{"at 0 once stopped, first seen already deleted", []*corev1.Pod{nil, deleting(stopped, 0)}, false},
		{"at 0 once stopped, never seen", []*corev1.Pod{deleting(stopped, 0)}, false},
		{"graceful", []*corev1.Pod{running, deleting(running, 30)}, false},
		{"graceful, stopped", []*corev1.Pod{running, deleting(stopped, 30)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var last *corev1.Pod
			if len(tc.seen) == 1 {
				last = tc.seen[0] // the informer never delivered it
			} else {
				var old any
				for _, p := range tc.seen {
					if p == nil {
						continue
					}
					f.c.podChanged(old, p)
					old, last = p, p
				}
			}
			got, why := f.c.forced(last)
			assert.Equal(t, tc.want, got)
			if tc.want {
				assert.Contains(t, why, "grace period 0 while its containers ran")
			} else {
				assert.Empty(t, why)
			}
		})
	}
}

// Once the pod is gone from the informer, the controller forgets the grace period it saw,
// so that the map does not grow with every pod ever deleted.
func TestPodDeletedForgetsTheFirstSeenGrace(t *testing.T) {
	f := newFixture(t)
	p := deleting(runningPod(), 0)
	f.c.podChanged(runningPod(), p)
	assert.Equal(t, int64(0), f.c.firstSeenGrace(p))
	f.c.podChanged(p, deleting(runningPod(), 30))
	assert.Equal(t, int64(0), f.c.firstSeenGrace(p), "the first deletion seen counts, not the latest")
	f.c.podDeleted(p)
	assert.Equal(t, int64(-1), f.c.firstSeenGrace(p))
}
