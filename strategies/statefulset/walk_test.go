package statefulset

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	oldHash = "db-old"
	newHash = "db-new"
)

var now = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

// pod is ordinal o of StatefulSet db on the template hash, Ready since readyFor ago
// (negative: not Ready).
func pod(o int, hash string, readyFor time.Duration) *corev1.Pod {
	status := corev1.ConditionTrue
	if readyFor < 0 {
		status = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-" + strconv.Itoa(o), Labels: map[string]string{
			appsv1.ControllerRevisionHashLabelKey: hash, appsv1.PodIndexLabel: strconv.Itoa(o)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}},
	}
}

// pods are ordinals 0..len(hashes)-1 on the given hashes, Ready for a minute.
func pods(hashes ...string) []*corev1.Pod {
	var list []*corev1.Pod
	for i, h := range hashes {
		list = append(list, pod(i, h, time.Minute))
	}
	return list
}

func TestWalkNext(t *testing.T) {
	tests := []struct {
		name string
		walk Walk
		want Decision
	}{{
		name: "held: the first step frees the highest ordinal",
		walk: Walk{Replicas: 3, Partition: HoldPartition, Want: 3, Step: 1, Hash: newHash, Pods: pods(oldHash, oldHash, oldHash)},
		want: Decision{Partition: 2},
	}, {
		name: "ordinal 2 not yet on the new template: wait",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 1, Hash: newHash, Pods: pods(oldHash, oldHash, oldHash)},
		want: Decision{Partition: 2, Waiting: "ordinal 2 to run the new template"},
	}, {
		name: "ordinal 2 recreated and not Ready: wait",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 1, Hash: newHash,
			Pods: []*corev1.Pod{pod(0, oldHash, time.Minute), pod(1, oldHash, time.Minute), pod(2, newHash, -1)}},
		want: Decision{Partition: 2, Waiting: "db-2 to be available"},
	}, {
		name: "ordinal 2 moved: the next step frees ordinal 1",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 1, Hash: newHash, Pods: pods(oldHash, oldHash, newHash)},
		want: Decision{Partition: 1},
	}, {
		name: "Ready, but not for minReadySeconds yet: wait, and look again when it will be",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 1, Hash: newHash, MinReadySeconds: 10,
			Pods: []*corev1.Pod{pod(0, oldHash, time.Minute), pod(1, oldHash, time.Minute), pod(2, newHash, 4*time.Second)}},
		want: Decision{Partition: 2, Waiting: "db-2 to be available", Recheck: 6 * time.Second},
	}, {
		name: "every ordinal moved: done",
		walk: Walk{Replicas: 3, Partition: 0, Want: 3, Step: 1, Hash: newHash, Pods: pods(newHash, newHash, newHash)},
		want: Decision{Partition: 0, Done: true},
	}, {
		name: "a step of 2 frees two ordinals at once",
		walk: Walk{Replicas: 5, Partition: HoldPartition, Want: 5, Step: 2, Hash: newHash, Pods: pods(oldHash, oldHash, oldHash, oldHash, oldHash)},
		want: Decision{Partition: 3},
	}, {
		name: "the last step never goes below 0",
		walk: Walk{Replicas: 3, Partition: 1, Want: 3, Step: 2, Hash: newHash, Pods: pods(oldHash, newHash, newHash)},
		want: Decision{Partition: 0},
	}, {
		name: "an old pod already unavailable uses up the step: wait",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 1, Hash: newHash,
			Pods: []*corev1.Pod{pod(0, oldHash, -1), pod(1, oldHash, time.Minute), pod(2, newHash, time.Minute)}},
		want: Decision{Partition: 2, Waiting: "1 pod(s) below ordinal 2 to be available (maxUnavailable 1)"},
	}, {
		name: "a missing old pod counts as unavailable",
		walk: Walk{Replicas: 3, Partition: 2, Want: 3, Step: 2, Hash: newHash,
			Pods: []*corev1.Pod{pod(0, oldHash, time.Minute), pod(2, newHash, time.Minute)}},
		want: Decision{Partition: 1},
	}, {
		name: "canary setReplicas 1: done once ordinal 2 moved",
		walk: Walk{Replicas: 3, Partition: 2, Want: 1, Step: 1, Hash: newHash, Pods: pods(oldHash, oldHash, newHash)},
		want: Decision{Partition: 2, Done: true},
	}, {
		name: "canary setReplicas 1 from held: frees ordinal 2 only",
		walk: Walk{Replicas: 3, Partition: HoldPartition, Want: 1, Step: 2, Hash: newHash, Pods: pods(oldHash, oldHash, oldHash)},
		want: Decision{Partition: 2},
	}, {
		name: "0 replicas: nothing to walk",
		walk: Walk{Replicas: 0, Partition: HoldPartition, Want: 0, Step: 1, Hash: newHash},
		want: Decision{Partition: HoldPartition, Done: true},
	}, {
		name: "a moved pod being deleted is not available: wait",
		walk: Walk{Replicas: 2, Partition: 1, Want: 2, Step: 1, Hash: newHash, Pods: func() []*corev1.Pod {
			list := pods(oldHash, newHash)
			list[1].DeletionTimestamp = &metav1.Time{Time: now}
			return list
		}()},
		want: Decision{Partition: 1, Waiting: "db-1 to be available"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.walk.Next(now))
		})
	}
}

// TestWalkKeepsTheFloor walks 5 pods with a step of 2 to the end, moving each freed pod
// to the new template only after a decision, as the StatefulSet controller does, and
// checks that no decision ever leaves more than 2 pods unavailable.
func TestWalkKeepsTheFloor(t *testing.T) {
	list := pods(oldHash, oldHash, oldHash, oldHash, oldHash)
	w := Walk{Replicas: 5, Partition: HoldPartition, Want: 5, Step: 2, Hash: newHash, Pods: list}
	var partitions []int32
	for range 20 {
		d := w.Next(now)
		if d.Done {
			break
		}
		require.NotEqual(t, w.Partition, d.Partition, "the walk stalled: %s", d.Waiting)
		w.Partition = d.Partition
		partitions = append(partitions, d.Partition)
		// The StatefulSet controller takes the freed pods down together
		down := 0
		for o := int(d.Partition); o < 5; o++ {
			if list[o].Labels[appsv1.ControllerRevisionHashLabelKey] != newHash {
				list[o] = pod(o, newHash, -1)
				down++
			}
		}
		assert.LessOrEqual(t, down, 2)
		// and they come back Ready on the new template
		for o := int(d.Partition); o < 5; o++ {
			list[o] = pod(o, newHash, time.Minute)
		}
	}
	assert.Equal(t, []int32{3, 1, 0}, partitions)
	assert.True(t, w.Next(now).Done)
}

func TestStep(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable *intstr.IntOrString
		replicas       int32
		want           int32
		wantErr        string
	}{
		{name: "unset is 1", replicas: 3, want: 1},
		{name: "a number", maxUnavailable: ptr.To(intstr.FromInt32(2)), replicas: 5, want: 2},
		{name: "a percentage rounds down", maxUnavailable: ptr.To(intstr.FromString("50%")), replicas: 5, want: 2},
		{name: "at least 1", maxUnavailable: ptr.To(intstr.FromString("25%")), replicas: 3, want: 1},
		{name: "0 is 1", maxUnavailable: ptr.To(intstr.FromInt32(0)), replicas: 3, want: 1},
		{name: "not a percentage", maxUnavailable: ptr.To(intstr.FromString("half")), replicas: 3,
			wantErr: `rollingParams.maxUnavailable "half"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Step(tt.maxUnavailable, tt.replicas)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOrdinal(t *testing.T) {
	labelled := pod(7, newHash, 0)
	named := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "my-db-12"}}
	none := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	for _, tt := range []struct {
		pod  *corev1.Pod
		want int32
		ok   bool
	}{{labelled, 7, true}, {named, 12, true}, {none, 0, false}} {
		got, ok := Ordinal(tt.pod)
		assert.Equal(t, tt.ok, ok, tt.pod.Name)
		assert.Equal(t, tt.want, got, tt.pod.Name)
	}
}
