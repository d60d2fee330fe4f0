package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
	crs := s.Client.AppsV1().ControllerRevisions(s.Namespace)
	return strategies.WaitSignalled(ctx, name, step, until, listwatch.ByName(name, crs.List, crs.Watch, s.Client), &appsv1.ControllerRevision{},
		func(obj runtime.Object) (*appsv1.ReplicaSet, error) {
			return revision.FromControllerRevision(obj.(*appsv1.ControllerRevision))
		})
}
