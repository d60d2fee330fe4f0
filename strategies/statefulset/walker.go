package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/strategies"
)

// Sets are the narrow clients of a walk: one namespace's StatefulSets and pods.
type Sets interface {
	strategies.Pods
	GetStatefulSet(ctx context.Context, name string) (*appsv1.StatefulSet, error)
	// SetPartition writes the RollingUpdate partition and maxUnavailable of the set, and
	// nothing else, and returns the set as the apiserver stored it.
	SetPartition(ctx context.Context, name string, partition int32, maxUnavailable *intstr.IntOrString) (*appsv1.StatefulSet, error)
	// SetReplicas writes the set's spec.replicas and nothing else.
	SetReplicas(ctx context.Context, name string, replicas int32) error
	// AskScaleDown asks for a scale-down after the BeforeScaleDown steps of the pods that
	// go (v1alpha1.DeferScaleDownRequestPatch), and writes nothing else.
	AskScaleDown(ctx context.Context, name string, to int32) error
}

// KubeSets implements Sets for one namespace over a Kubernetes clientset; its pods are
// strategies.KubeClients'.
type KubeSets struct {
	strategies.KubeClients
}

var _ Sets = &KubeSets{}

// GetStatefulSet reads a StatefulSet.
func (c *KubeSets) GetStatefulSet(ctx context.Context, name string) (*appsv1.StatefulSet, error) {
	return c.Client.AppsV1().StatefulSets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
}

// SetPartition is a merge patch of spec.updateStrategy alone, so that it never conflicts
// with the controller's writes of the template and the replicas.
func (c *KubeSets) SetPartition(ctx context.Context, name string, partition int32, maxUnavailable *intstr.IntOrString) (*appsv1.StatefulSet, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"updateStrategy": appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition, MaxUnavailable: maxUnavailable},
	}}})
	if err != nil {
		return nil, err
	}
	var set *appsv1.StatefulSet
	err = apiretry.Do(ctx, func() error {
		set, err = c.Client.AppsV1().StatefulSets(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	return set, err
}

// Walker moves the pods of a StatefulSet to its update revision, highest ordinal first,
// by lowering the partition (docs/statefulsets.md, "A rollout").
type Walker struct {
	Sets Sets
	Out  *strategies.Progress
	// MinReadySeconds is how long a moved pod must be Ready before the next step.
	MinReadySeconds int32
	// MaxUnavailable is the Rolling params' maxUnavailable; nil is 1.
	MaxUnavailable *intstr.IntOrString
	// Timeout bounds each step: the walk fails when a step makes no progress for that long.
	Timeout time.Duration
}

// Walk moves the want highest ordinals of StatefulSet name to the template whose
// controller-revision-hash is hash, and returns once they are available. It starts from
// the set's partition as it is, so a walk run again after a restart goes on where the
// last one stopped.
func (w *Walker) Walk(ctx context.Context, name, hash string, want int32) error {
	set, err := w.Sets.GetStatefulSet(ctx, name)
	if err != nil {
		return fmt.Errorf("reading StatefulSet %s: %w", name, err)
	}
	tracker, err := strategies.StartPodTracker(ctx, w.Sets, metav1.FormatLabelSelector(set.Spec.Selector))
	if err != nil {
		return err
	}
	step, err := Step(w.MaxUnavailable, replicas(set))
	if err != nil {
		return strategies.Invalidf("%v", err)
	}
	checked := false
	for {
		walk := Walk{Replicas: replicas(set), Partition: partition(set), Want: want, Step: step, Hash: hash,
			MinReadySeconds: w.MinReadySeconds}
		var decision Decision
		err := tracker.Until(ctx, strategies.Wait{Revision: "StatefulSet " + name, WaitingFor: "its pods to move to " + hash,
			Selector: metav1.FormatLabelSelector(set.Spec.Selector), Timeout: w.Timeout},
			func(now time.Time) (bool, time.Duration, string, error) {
				pods, err := tracker.PodsSelectedBy("StatefulSet "+name, set.Spec.Selector)
				if err != nil {
					return false, 0, "", err
				}
				walk.Pods = pods
				decision = walk.Next(now)
				return decision.Done || decision.Partition != walk.Partition, decision.Recheck, decision.Waiting, nil
			})
		if err != nil {
			return err
		}
		if decision.Done {
			w.Out.Printf("StatefulSet %s: ordinals %d and above run %s and are available", name, walk.Replicas-want, hash)
			return nil
		}
		var limit *intstr.IntOrString
		if step > 1 {
			limit = ptrInt(step)
		}
		if last := min(walk.Partition, walk.Replicas) - 1; last == decision.Partition {
			w.Out.Printf("StatefulSet %s: moving ordinal %d to %s", name, last, hash)
		} else {
			w.Out.Printf("StatefulSet %s: moving ordinals %d to %d to %s", name, last, decision.Partition, hash)
		}
		set, err = w.Sets.SetPartition(ctx, name, decision.Partition, limit)
		if err != nil {
			return fmt.Errorf("setting the partition of StatefulSet %s to %d: %w", name, decision.Partition, err)
		}
		if !checked && limit != nil {
			checked = true
			if ru := set.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil {
				// The apiserver dropped the field: the MaxUnavailableStatefulSet feature gate
				// is off, and the StatefulSet controller takes one pod down at a time.
				w.Out.Printf("StatefulSet %s: this cluster does not honour a StatefulSet's maxUnavailable (feature gate MaxUnavailableStatefulSet); moving one ordinal at a time", name)
				step = 1
			}
		}
	}
}

func replicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas == nil {
		return 1
	}
	return *set.Spec.Replicas
}

// partition is the set's RollingUpdate partition; 0 when it has none.
func partition(set *appsv1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

func ptrInt(n int32) *intstr.IntOrString {
	v := intstr.FromInt32(n)
	return &v
}
