package strategies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

// StepSignals is what a Rolling rollout with steps needs beyond Clients: it records the
// step it is at on the revision, and waits at a pause for kubectl stagehand rollout
// resume or promote (the annotations of api/v1alpha1/rolling_steps.go).
type StepSignals interface {
	// RecordStep writes s as the step annotation of the revision.
	RecordStep(ctx context.Context, revision string, s v1alpha1.StepStatus) error
	// WaitResumed blocks until the revision is promoted (promoted is true), step is
	// resumed, until passes (nil: no end), or ctx ends (ErrCancelled).
	WaitResumed(ctx context.Context, revision string, step int, until *time.Time) (promoted bool, err error)
}

var _ StepSignals = &KubeClients{}

// RecordStep writes the step annotation with a merge patch (the deployer may patch its
// revisions; the run-code and snapshot policies leave this annotation alone).
func (c *KubeClients) RecordStep(ctx context.Context, revision string, s v1alpha1.StepStatus) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1alpha1.StepAnnotation: v1alpha1.FormatStep(s)}}})
	if err != nil {
		return err
	}
	err = apiretry.Do(ctx, func() error {
		_, err := c.Client.AppsV1().ReplicaSets(c.Namespace).Patch(ctx, revision, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("recording step %d of %s: %w", s.Step, revision, cancelled(ctx, err))
	}
	return nil
}

// WaitResumed follows the revision with a watch (no polling) until its resume-step
// annotation reaches step or its promote annotation is set.
func (c *KubeClients) WaitResumed(ctx context.Context, revision string, step int, until *time.Time) (bool, error) {
	rss := c.Client.AppsV1().ReplicaSets(c.Namespace)
	return WaitSignalled(ctx, revision, step, until, listwatch.ByName(revision, rss.List, rss.Watch, c.Client), &appsv1.ReplicaSet{},
		func(obj runtime.Object) (*appsv1.ReplicaSet, error) { return obj.(*appsv1.ReplicaSet), nil })
}

// WaitSignalled is WaitResumed on the record of revision name of either kind: lw lists and
// watches it (objects like obj), and view reads one as the revision's ReplicaSet view. It
// reports whether the revision was promoted; a pause with until ends there.
func WaitSignalled(ctx context.Context, name string, step int, until *time.Time, lw cache.ListerWatcher, obj runtime.Object,
	view func(runtime.Object) (*appsv1.ReplicaSet, error)) (bool, error) {
	wait := ctx
	if until != nil {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, *until)
		defer cancel()
	}
	promoted := false
	err := listwatch.Until(wait, lw, obj, nil, func(ev watch.Event) (bool, error) {
		m, ok := ev.Object.(metav1.Object)
		if !ok || m.GetName() != name {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("revision %s was deleted while paused at step %d", name, step)
		}
		rs, err := view(ev.Object)
		if err != nil {
			return false, err
		}
		promoted = v1alpha1.Promoted(rs)
		return promoted || v1alpha1.ResumedStep(rs) >= step, nil
	})
	switch {
	case err == nil:
		return promoted, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("paused at step %d of %s: %w: %w", step, name, ErrCancelled, ctx.Err())
	case until != nil && errors.Is(err, context.DeadlineExceeded):
		return false, nil // the pause's duration is over
	}
	return false, err
}
