package statefulset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/strategies"
)

// scaleTo sets the StatefulSet's replicas to desired. A scale-down of pods that a
// BeforeScaleDown policy selects is asked of the controller instead, which lowers them one
// ordinal at a time, highest first, after each pod's steps (docs/statefulsets.md,
// "Scale-down"); if that does not end within the policy's grace period per pod and a
// margin, the deployer scales down itself, as for ReplicaSets.
func (r *Rollout) scaleTo(ctx context.Context, desired int32) error {
	sets := r.Walker.Sets
	set, err := sets.GetStatefulSet(ctx, r.Config)
	if err != nil {
		return fmt.Errorf("reading StatefulSet %s: %w", r.Config, err)
	}
	current := ptr.Deref(set.Spec.Replicas, 1)
	var policy *v1alpha1.DeferPolicy
	if desired < current && r.Defer != nil {
		policy = r.Defer.PolicyFor(ctx, set.Spec.Template.Labels, r.Walker.Out)
	}
	if policy == nil {
		return sets.SetReplicas(ctx, r.Config, desired)
	}
	r.Walker.Out.Printf("Scaling %s down to %d, one ordinal at a time, once DeferPolicy %s has run its BeforeScaleDown steps for each pod that goes", r.Config, desired, policy.Name)
	if err := sets.AskScaleDown(ctx, r.Config, desired); err != nil {
		return fmt.Errorf("asking for the scale-down of %s to %d: %w", r.Config, desired, err)
	}
	timeout := time.Duration(int64(current-desired)*policy.GracePeriod())*time.Second + strategies.ScaleDownMargin
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		set, err := sets.GetStatefulSet(ctx, r.Config)
		if err != nil {
			return false, nil //nolint:nilerr // read again until the deadline
		}
		return ptr.Deref(set.Spec.Replicas, 1) <= desired, nil
	})
	if err == nil || ctx.Err() != nil {
		return err
	}
	r.Walker.Out.Printf("The BeforeScaleDown steps for %s did not end within %s: scaling down without waiting for them", r.Config, timeout)
	return sets.SetReplicas(ctx, r.Config, desired)
}

// AskScaleDown asks the controller, with a merge patch of the annotation alone, to lower
// the set's replicas to to after the BeforeScaleDown steps of the pods that go.
func (c *KubeSets) AskScaleDown(ctx context.Context, name string, to int32) error {
	patch := v1alpha1.DeferScaleDownRequestPatch(to)
	return apiretry.Do(ctx, func() error {
		_, err := c.Client.AppsV1().StatefulSets(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
