package strategies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

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
	wait := ctx
	if until != nil {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, *until)
		defer cancel()
	}
	rss := c.Client.AppsV1().ReplicaSets(c.Namespace)
	promoted := false
	err := listwatch.Until(wait, listwatch.ByName(revision, rss.List, rss.Watch, c.Client), &appsv1.ReplicaSet{}, nil,
		func(ev watch.Event) (bool, error) {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok || rs.Name != revision {
				return false, nil
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("revision %s was deleted while paused at step %d", revision, step)
			}
			promoted = v1alpha1.Promoted(rs)
			return promoted || v1alpha1.ResumedStep(rs) >= step, nil
		})
	switch {
	case err == nil:
		return promoted, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("paused at step %d of %s: %w: %w", step, revision, ErrCancelled, ctx.Err())
	case until != nil && errors.Is(err, context.DeadlineExceeded):
		return false, nil // the pause's duration is over
	}
	return false, err
}
