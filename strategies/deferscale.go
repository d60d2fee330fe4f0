package strategies

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

// ScaleDownDeferrer is implemented by clients that honour BeforeScaleDown DeferPolicies:
// instead of lowering a ReplicaSet's replicas, they ask the controller to do it once the
// steps of the pods that go have run (docs/defer.md).
type ScaleDownDeferrer interface {
	// DeferScaleDown lowers rs to replicas through the controller when a BeforeScaleDown
	// policy selects rs's pods, and returns once the replicas are lowered; false when no
	// policy does, and the caller scales as usual.
	DeferScaleDown(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, out *Progress) (bool, error)
}

// ScaleDownMargin is added to a policy's grace period before the deployer stops waiting
// for the controller and scales down itself: the steps of every pod run at once, each
// bounded by the grace period.
const ScaleDownMargin = 30 * time.Second

// DeferredScaleDowns finds the BeforeScaleDown policies of one namespace. They are read
// once per deployer, at the first scale-down: a policy created during a rollout applies
// from the next one.
type DeferredScaleDowns struct {
	Stagehand stagehandclient.Interface
	Namespace string

	once     sync.Once
	policies []*v1alpha1.DeferPolicy
}

// PolicyFor is the first BeforeScaleDown policy by name that selects pods with podLabels,
// or nil. A failed read (an older install without DeferPolicies) defers nothing.
func (d *DeferredScaleDowns) PolicyFor(ctx context.Context, podLabels map[string]string, out *Progress) *v1alpha1.DeferPolicy {
	if d == nil || d.Stagehand == nil {
		return nil
	}
	d.once.Do(func() {
		list, err := d.Stagehand.StagehandV1alpha1().DeferPolicies(d.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				out.Printf("Cannot read the DeferPolicies (%v): scaling down without BeforeScaleDown steps", err)
			}
			return
		}
		for i := range list.Items {
			d.policies = append(d.policies, &list.Items[i])
		}
	})
	found, _ := v1alpha1.FirstSelecting(d.policies, v1alpha1.DeferBeforeScaleDown, podLabels)
	return found
}

// DeferScaleDown implements ScaleDownDeferrer for KubeClients with Defer set.
func (c *KubeClients) DeferScaleDown(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, out *Progress) (bool, error) {
	policy := c.Defer.PolicyFor(ctx, rs.Spec.Template.Labels, out)
	if policy == nil {
		return false, nil
	}
	out.Printf("Scaling %s down to %d once DeferPolicy %s has run its BeforeScaleDown steps for the pods that go", rs.Name, replicas, policy.Name)
	patch := v1alpha1.DeferScaleDownRequestPatch(replicas)
	err := apiretry.Do(ctx, func() error {
		_, err := c.Client.AppsV1().ReplicaSets(c.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return true, cancelled(ctx, fmt.Errorf("asking for the scale-down of %s to %d: %w", rs.Name, replicas, err))
	}
	timeout := time.Duration(policy.GracePeriod())*time.Second + ScaleDownMargin
	if err := c.waitScaledDown(ctx, rs.Name, replicas, timeout); err != nil {
		if ctx.Err() != nil {
			return true, cancelled(ctx, err)
		}
		out.Printf("The BeforeScaleDown steps for %s did not end within %s (%v): scaling down without waiting for them", rs.Name, timeout, err)
		if err := c.ScaleReplicaSet(ctx, rs.Name, replicas); err != nil {
			return true, cancelled(ctx, fmt.Errorf("scaling %s to %d: %w", rs.Name, replicas, err))
		}
	}
	return true, nil
}

// waitScaledDown watches the ReplicaSet until its replicas are at most replicas, or it is
// deleted. It waits with watchtools.UntilWithSync rather than listwatch.Until, so that its
// error stays UntilWithSync's: DeferScaleDown prints a timeout in those words ("timed out
// waiting for the condition") and hands a cancelled wait's error to cancelled as it is.
func (c *KubeClients) waitScaledDown(ctx context.Context, name string, replicas int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rss := c.Client.AppsV1().ReplicaSets(c.Namespace)
	_, err := watchtools.UntilWithSync(ctx, listwatch.ByName(name, rss.List, rss.Watch, nil), &appsv1.ReplicaSet{}, nil, func(ev watch.Event) (bool, error) {
		rs, ok := ev.Object.(*appsv1.ReplicaSet)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return true, nil
		}
		return Replicas(rs) <= replicas, nil
	})
	return err
}
