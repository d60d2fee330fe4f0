package rollout

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// Stepped is what ResumeStep and Promote did: the revision, and the step it was at.
type Stepped struct {
	RevisionName string
	Step         v1alpha1.StepStatus
}

// ResumeStep lets a rollout paused at a step (rollingParams.steps, a pause without a
// duration, or one with its time still running) go on: it records the step's number as
// the revision's resume-step, which the deployer watches for. It returns nil when the
// latest revision is not paused at a step.
func (c *Client) ResumeStep(ctx context.Context, name string) (*Stepped, error) {
	var out *Stepped
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		out = nil
		st, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		rs := st.Latest()
		if rs == nil || revision.Phase(rs).IsTerminal() {
			return nil
		}
		step, ok := v1alpha1.StepOf(rs)
		if !ok || step.State != v1alpha1.StepPaused {
			return nil
		}
		out = &Stepped{RevisionName: rs.Name, Step: step}
		if v1alpha1.ResumedStep(rs) >= step.Step {
			return nil
		}
		return c.annotate(ctx, rs, v1alpha1.ResumeStepAnnotation, strconv.Itoa(step.Step))
	})
	return out, err
}

// Promote skips the remaining steps of the in-flight rollout: the deployer completes it
// to 100% (then runs the post hook). It is refused when no rollout is in flight, or when
// the rollout has no steps.
func (c *Client) Promote(ctx context.Context, name string) (*Stepped, error) {
	var out *Stepped
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		rs := st.Latest()
		if rs == nil || revision.Phase(rs).IsTerminal() {
			what := "no revision"
			if rs != nil {
				what = "revision " + rs.Name + " is " + string(revision.Phase(rs))
			}
			return refused("no rollout of %s is in progress: %s; promote skips the steps of a rollout in flight", st.Name(), what)
		}
		spec, err := revision.Snapshot(rs)
		if err != nil {
			return err
		}
		if p := spec.Strategy.RollingParams; spec.Strategy.Type != v1alpha1.DeploymentStrategyTypeRolling || p == nil || len(p.Steps) == 0 {
			return refused("revision %s has no rollingParams.steps to skip: it already goes straight to 100%%", rs.Name)
		}
		step, _ := v1alpha1.StepOf(rs)
		out = &Stepped{RevisionName: rs.Name, Step: step}
		if v1alpha1.Promoted(rs) {
			return nil
		}
		return c.annotate(ctx, rs, v1alpha1.PromoteAnnotation, "true")
	})
	return out, err
}

// annotate sets one annotation of a revision with the resourceVersion read.
func (c *Client) annotate(ctx context.Context, rs *appsv1.ReplicaSet, key, value string) error {
	rs = rs.DeepCopy()
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[key] = value
	_, err := revisions.Client{Kube: c.Kube}.Update(ctx, rs, metav1.UpdateOptions{})
	return err
}
