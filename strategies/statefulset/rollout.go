package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/strategies"
)

// Rollout is the Rolling strategy of a DeploymentConfig with spec.statefulSet
// (docs/statefulsets.md, "A rollout"): the pre hook, the walk of the StatefulSet
// <config> from its highest ordinal, and the post hook.
type Rollout struct {
	Walker *Walker
	Hooks  strategies.HookRunner
	Params v1alpha1.RollingDeploymentStrategyParams
	// Config is the DeploymentConfig's name, and so its StatefulSet's.
	Config string
	// Record reads the revision's record (its ReplicaSet view) from the apiserver.
	Record func(ctx context.Context) (*appsv1.ReplicaSet, error)
	// Signals record the step of a rollout with steps, and wait for resume and promote.
	Signals strategies.StepSignals
	// Defer finds the BeforeScaleDown policies of a scale-down; nil scales at once.
	Defer *strategies.DeferredScaleDowns
}

var _ strategies.Strategy = &Rollout{}

// Deploy walks every ordinal of the StatefulSet to the template of revision to, with
// desired replicas. It is idempotent: run again, it goes on from the partition as it is.
func (r *Rollout) Deploy(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error {
	n, _ := revision.Number(to)
	hash, err := r.templateHash(ctx, n)
	if err != nil {
		return err
	}
	// Exec hooks select New and Old pods by the hash that the revision's record holds,
	// which the ExecutionHook controller checks: run none before the record has it.
	if err := r.recordedHash(ctx, to, hash); err != nil {
		return err
	}
	if err := r.Hooks.Run(ctx, strategies.StagePre, r.Params.Pre); err != nil {
		return fmt.Errorf("running the pre hook of %s: %w", to.Name, err)
	}
	if err := r.scaleTo(ctx, desired); err != nil {
		return fmt.Errorf("scaling StatefulSet %s to %d: %w", r.Config, desired, err)
	}
	// The first revision has no pods to canary against: it rolls straight out, as a
	// ReplicaSet DC's first revision does.
	if from != nil {
		if err := r.steps(ctx, to, hash, desired); err != nil {
			return err
		}
	}
	if err := r.Walker.Walk(ctx, r.Config, hash, desired); err != nil {
		return err
	}
	if err := r.Hooks.Run(ctx, strategies.StagePost, r.Params.Post); err != nil {
		return fmt.Errorf("running the post hook of %s: %w", to.Name, err)
	}
	return nil
}

// templateHash waits until the StatefulSet holds revision n's template and its status has
// observed it, and returns the template's controller-revision-hash. The controller writes
// the template before it creates the deployer pod, so the wait is for the StatefulSet
// controller's status, a moment.
func (r *Rollout) templateHash(ctx context.Context, n int64) (string, error) {
	var hash string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		set, err := r.Walker.Sets.GetStatefulSet(ctx, r.Config)
		if err != nil {
			return false, nil //nolint:nilerr // read again until the deadline
		}
		if set.Annotations[v1alpha1.StatefulSetRevisionAnnotation] != strconv.FormatInt(n, 10) {
			return false, nil
		}
		if set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == "" {
			return false, nil
		}
		hash = set.Status.UpdateRevision
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for StatefulSet %s to hold the template of revision %d: %w", r.Config, n, err)
	}
	return hash, nil
}

// recordedHash waits until the record of revision to holds hash (the controller writes it
// once the StatefulSet's status names it), and gives to the same annotation, so that the
// hooks of this run select the pods the record says.
func (r *Rollout) recordedHash(ctx context.Context, to *appsv1.ReplicaSet, hash string) error {
	if r.Record == nil {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		rec, err := r.Record(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // read again until the deadline
		}
		return revision.TemplateHash(rec) == hash, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for revision %s to record its template hash %s: %w", to.Name, hash, err)
	}
	if to.Annotations == nil {
		to.Annotations = map[string]string{}
	}
	to.Annotations[v1alpha1.TemplateHashAnnotation] = hash
	return nil
}

// SetReplicas is a merge patch of spec.replicas alone.
func (c *KubeSets) SetReplicas(ctx context.Context, name string, replicas int32) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	if err != nil {
		return err
	}
	return apiretry.Do(ctx, func() error {
		_, err := c.Client.AppsV1().StatefulSets(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
