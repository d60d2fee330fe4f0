package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// RollbackOptions choose the revision and the parts of its spec that a rollback takes.
// The pod template (with its exact images) is always taken; the rest only when asked,
// which is the difference between an application and a configuration rollback.
type RollbackOptions struct {
	// ToRevision is the revision to go back to; 0 means the newest Complete revision
	// before the latest one.
	ToRevision int64
	// ChangeTriggers also takes spec.triggers.
	ChangeTriggers bool
	// ChangeStrategy also takes spec.strategy.
	ChangeStrategy bool
	// ChangeScalingSettings also takes spec.replicas and spec.selector.
	ChangeScalingSettings bool
	// Message goes to status.details.message.
	Message string
}

// RollbackPlan is what a rollback writes: the DC's spec before and after.
type RollbackPlan struct {
	// From is the latest revision at planning time; To the revision rolled back to.
	From, To int64
	// Current is the DC's spec now; Spec the spec the rollback writes.
	Current, Spec v1alpha1.DeploymentConfigSpec
	// DisabledTriggers describe the automatic ImageChange triggers that the rollback
	// switches off, so that the next image push does not undo it.
	DisabledTriggers []string
	// Supersedes names the in-flight revision that the rollback's revision supersedes, or "".
	Supersedes string

	state *State
}

// PlanRollback works out a rollback without writing anything. It is refused while the
// DC is paused or has a request waiting, and when the revision is missing or unusable.
func (c *Client) PlanRollback(ctx context.Context, name string, opts RollbackOptions) (*RollbackPlan, error) {
	st, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return planRollback(st, opts)
}

func planRollback(st *State, opts RollbackOptions) (*RollbackPlan, error) {
	if st.DC.Spec.Paused {
		return nil, refused("%s is paused: resume it first (kubectl stagehand rollout resume %s)", st.Name(), st.Name())
	}
	if req := st.pendingRequest(); req != nil {
		return nil, refused("a %s request of %s is already waiting for the controller; try again once it started", req.Action, st.Name())
	}
	latest := st.DC.Status.LatestVersion
	to := opts.ToRevision
	if to == 0 {
		for i := len(st.Revisions) - 1; i >= 0; i-- {
			if n, _ := revision.Number(st.Revisions[i]); n < latest && revision.Phase(st.Revisions[i]) == v1alpha1.RevisionPhaseComplete {
				to = n
				break
			}
		}
		if to == 0 {
			return nil, refused("%s has no Complete revision before revision %d to roll back to (%s); pick one with --to-revision",
				st.Name(), latest, st.summary())
		}
	}
	if to >= latest {
		return nil, refused("revision %d is not an earlier revision of %s (the latest is %d)", to, st.Name(), latest)
	}
	target := st.Revision(to)
	if target == nil {
		return nil, refused("revision %d of %s no longer exists: it was pruned (revisionHistoryLimit). Kept: %s", to, st.Name(), st.summary())
	}
	old, err := revision.Snapshot(target)
	if err != nil {
		return nil, err
	}

	plan := &RollbackPlan{From: latest, To: to, Current: *st.DC.Spec.DeepCopy(), state: st}
	spec := st.DC.Spec.DeepCopy()
	spec.Template = *old.Template.DeepCopy()
	if opts.ChangeTriggers {
		spec.Triggers = old.DeepCopy().Triggers
	}
	if opts.ChangeStrategy {
		spec.Strategy = *old.Strategy.DeepCopy()
	}
	if opts.ChangeScalingSettings {
		spec.Replicas = old.DeepCopy().Replicas
		spec.Selector = old.DeepCopy().Selector
	}
	for i := range spec.Triggers {
		p := spec.Triggers[i].ImageChangeParams
		if spec.Triggers[i].Type == v1alpha1.DeploymentTriggerOnImageChange && p != nil && p.Automatic {
			p.Automatic = false
			plan.DisabledTriggers = append(plan.DisabledTriggers,
				fmt.Sprintf("%s (containers %s)", p.From.Image, strings.Join(p.ContainerNames, ", ")))
		}
	}
	plan.Spec = *spec
	if rs := st.Latest(); rs != nil && !revision.Phase(rs).IsTerminal() {
		plan.Supersedes = rs.Name
	}
	return plan, nil
}

// summary lists the revisions with their phases, for messages.
func (s *State) summary() string {
	if len(s.Revisions) == 0 {
		return "no revisions"
	}
	parts := make([]string, 0, len(s.Revisions))
	for _, rs := range s.Revisions {
		n, _ := revision.Number(rs)
		parts = append(parts, fmt.Sprintf("%d %s", n, revision.Phase(rs)))
	}
	return strings.Join(parts, ", ")
}

// Diff is the plan as a unified diff of the spec in YAML.
func (p *RollbackPlan) Diff() (string, error) {
	before, err := yaml.Marshal(p.Current)
	if err != nil {
		return "", err
	}
	after, err := yaml.Marshal(p.Spec)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(before)), B: difflib.SplitLines(string(after)),
		FromFile: fmt.Sprintf("spec (now, revision %d)", p.From),
		ToFile:   fmt.Sprintf("spec (rollback to revision %d)", p.To),
		Context:  3,
	})
}

// Rollback writes a plan: the new spec and a Rollback request in one Update carrying the
// resourceVersion the plan was made from. When the DC changed in between, the rollback is
// planned again from the fresh state with the same options.
func (c *Client) Rollback(ctx context.Context, plan *RollbackPlan, opts RollbackOptions) (*RollbackPlan, *Requested, error) {
	name := plan.state.DC.Name
	opts.ToRevision = plan.To
	req := v1alpha1.RolloutRequest{ID: c.newID(), Action: v1alpha1.RolloutRequestRollback, Message: opts.Message}
	var out *Requested
	fresh := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !fresh {
			st, err := c.Get(ctx, name)
			if err != nil {
				return err
			}
			if current, _ := v1alpha1.ParseRolloutRequest(st.DC); current != nil && current.ID == req.ID {
				out = requested(name, *current)
				return nil
			}
			if plan, err = planRollback(st, opts); err != nil {
				return err
			}
		}
		fresh = false
		dc := plan.state.DC.DeepCopy()
		dc.Spec = plan.Spec
		req.LatestVersion, req.RollbackTo = dc.Status.LatestVersion, plan.To
		if dc.Annotations == nil {
			dc.Annotations = map[string]string{}
		}
		dc.Annotations[v1alpha1.RolloutRequestAnnotation] = req.Encode()
		if _, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Update(ctx, dc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		out = requested(name, req)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return plan, out, nil
}
