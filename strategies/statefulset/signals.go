package statefulset

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
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
	"github.com/stagehand-dev/stagehand/strategies"
)

// RecordSignals implements strategies.StepSignals on the record of a StatefulSet
// revision, a ControllerRevision: the same step, resume and promote annotations as on a
// ReplicaSet revision, which kubectl stagehand rollout resume and promote write.
type RecordSignals struct {
	Client    kubernetes.Interface
	Namespace string
}

var _ strategies.StepSignals = RecordSignals{}

// RecordStep writes the step annotation of the record with a merge patch.
func (s RecordSignals) RecordStep(ctx context.Context, name string, st v1alpha1.StepStatus) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1alpha1.StepAnnotation: v1alpha1.FormatStep(st)}}})
	if err != nil {
		return err
	}
	err = apiretry.Do(ctx, func() error {
		_, err := s.Client.AppsV1().ControllerRevisions(s.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("recording step %d of %s: %w", st.Step, name, err)
	}
	return nil
}

// WaitResumed follows the record with a watch until its resume-step annotation reaches
// step or its promote annotation is set, until passes, or ctx ends.
func (s RecordSignals) WaitResumed(ctx context.Context, name string, step int, until *time.Time) (bool, error) {
	wait := ctx
	if until != nil {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, *until)
		defer cancel()
	}
	crs := s.Client.AppsV1().ControllerRevisions(s.Namespace)
	promoted := false
	err := listwatch.Until(wait, listwatch.ByName(name, crs.List, crs.Watch, s.Client), &appsv1.ControllerRevision{}, nil,
		func(ev watch.Event) (bool, error) {
			cr, ok := ev.Object.(*appsv1.ControllerRevision)
			if !ok || cr.Name != name {
				return false, nil
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("revision %s was deleted while paused at step %d", name, step)
			}
			view, err := revision.FromControllerRevision(cr)
			if err != nil {
				return false, err
			}
			promoted = v1alpha1.Promoted(view)
			return promoted || v1alpha1.ResumedStep(view) >= step, nil
		})
	switch {
	case err == nil:
		return promoted, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("paused at step %d of %s: %w: %w", step, name, strategies.ErrCancelled, ctx.Err())
	case until != nil && errors.Is(err, context.DeadlineExceeded):
		return false, nil // the pause's duration is over
	}
	return false, err
}
