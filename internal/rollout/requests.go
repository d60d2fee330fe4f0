package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// Requested is the outcome of an operation that the controller carries out.
type Requested struct {
	// Revision is the revision the request creates (Latest, Rollback) or restarts (Retry).
	Revision int64
	// RevisionName is its ReplicaSet's name.
	RevisionName string
	// Request is the request as written.
	Request v1alpha1.RolloutRequest
	// WaitsFor says what the controller waits for before it acts (a Retry waits for the
	// revision's failed hook to finish), or "".
	WaitsFor string
}

// Latest asks for a new revision of the current spec, with the cause Manual. It is
// refused while the DC is paused or a rollout is in flight. message (optional) goes to
// status.details.message.
func (c *Client) Latest(ctx context.Context, name, message string) (*Requested, error) {
	return c.request(ctx, name, v1alpha1.RolloutRequest{ID: c.newID(), Action: v1alpha1.RolloutRequestLatest, Message: message},
		func(st *State) error {
			if st.DC.Spec.Paused {
				return refused("%s is paused: resume it first (kubectl stagehand rollout resume %s)", st.Name(), st.Name())
			}
			if why := st.inFlight(); why != "" {
				return refused("a rollout of %s is in flight (%s): wait for it (kubectl stagehand rollout status %s) or cancel it (kubectl stagehand rollout cancel %s)",
					st.Name(), why, st.Name(), st.Name())
			}
			return nil
		})
}

// Retry asks to run the Failed latest revision again: the controller deletes its deployer
// and hook pods and ExecutionHooks and resets it to New. It is refused for any other
// state. While the revision's failed hook has not finished, the controller waits for it;
// WaitsFor says so.
func (c *Client) Retry(ctx context.Context, name string) (*Requested, error) {
	waits := ""
	out, err := c.request(ctx, name, v1alpha1.RolloutRequest{ID: c.newID(), Action: v1alpha1.RolloutRequestRetry},
		func(st *State) error {
			if st.DC.Spec.Paused {
				return refused("%s is paused: resume it first (kubectl stagehand rollout resume %s)", st.Name(), st.Name())
			}
			if req := st.pendingRequest(); req != nil {
				return refused("a %s request of %s is already waiting for the controller", req.Action, st.Name())
			}
			latest := st.Latest()
			if latest == nil {
				return refused("%s has no revision to retry", st.Name())
			}
			if p := revision.Phase(latest); p != v1alpha1.RevisionPhaseFailed {
				return refused("only a Failed latest revision can be retried, and %s is %s", latest.Name, p)
			}
			waits = ""
			if revision.FailureHookPending(latest) {
				waits = fmt.Sprintf("the failed hook of %s has not finished; the retry starts once it has ended "+
					"(kubectl stagehand rollout logs %s --revision %d shows it)", latest.Name, st.Name(), st.DC.Status.LatestVersion)
			}
			return nil
		})
	if out != nil {
		out.WaitsFor = waits
	}
	return out, err
}

// request writes req into the DC's rollout-request annotation after check accepts the
// state, with the resourceVersion of that state. On a conflict it reads again, finds its
// own request if an earlier attempt landed, and otherwise checks again.
func (c *Client) request(ctx context.Context, name string, req v1alpha1.RolloutRequest, check func(*State) error) (*Requested, error) {
	var out *Requested
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		if current, _ := v1alpha1.ParseRolloutRequest(st.DC); current != nil && current.ID == req.ID {
			out = requested(st.DC.Name, *current)
			return nil
		}
		if err := check(st); err != nil {
			return err
		}
		req.LatestVersion = st.DC.Status.LatestVersion
		dc := st.DC.DeepCopy()
		if dc.Annotations == nil {
			dc.Annotations = map[string]string{}
		}
		dc.Annotations[v1alpha1.RolloutRequestAnnotation] = req.Encode()
		if _, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Update(ctx, dc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		out = requested(dc.Name, req)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func requested(dc string, req v1alpha1.RolloutRequest) *Requested {
	n := req.LatestVersion + 1
	if req.Action == v1alpha1.RolloutRequestRetry {
		n = req.LatestVersion
	}
	return &Requested{Revision: n, RevisionName: v1alpha1.RevisionName(dc, n), Request: req}
}

// Cancelled is the outcome of Cancel.
type Cancelled struct {
	// RevisionName is the cancelled revision.
	RevisionName string
	// Serving is the revision that serves again (the newest Complete one), or "".
	Serving string
	// Done is true once the controller marked the revision Failed within the wait.
	Done bool
}

// Cancel marks the in-flight latest revision cancelled and waits up to timeout for the
// controller to stop it (its deployer and hook pods deleted, Failed with reason Cancelled).
func (c *Client) Cancel(ctx context.Context, name string, timeout time.Duration) (*Cancelled, error) {
	var rs *appsv1.ReplicaSet
	var st *State
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if st, err = c.Get(ctx, name); err != nil {
			return err
		}
		rs = st.Latest()
		if rs == nil || revision.Phase(rs).IsTerminal() {
			if req := st.pendingRequest(); req != nil {
				return refused("the %s request of %s has not started a revision yet; cancel once it has", req.Action, st.Name())
			}
			what := "no revision"
			if rs != nil {
				what = fmt.Sprintf("revision %s is %s", rs.Name, revision.Phase(rs))
			}
			return refused("no rollout of %s is in progress: %s", st.Name(), what)
		}
		if revision.Cancelled(rs) {
			return nil
		}
		rs = rs.DeepCopy()
		rs.Annotations[v1alpha1.CancelledAnnotation] = "true"
		_, err = revisions.Client{Kube: c.Kube}.Update(ctx, rs, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &Cancelled{RevisionName: rs.Name}
	for i := len(st.Revisions) - 1; i >= 0; i-- {
		if revision.Phase(st.Revisions[i]) == v1alpha1.RevisionPhaseComplete {
			out.Serving = st.Revisions[i].Name
			break
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = c.waitReplicaSet(wctx, rs.Name, func(live *appsv1.ReplicaSet) bool { return live == nil || revision.Phase(live).IsTerminal() })
	out.Done = err == nil
	return out, nil
}

// SetPaused pauses or resumes a DeploymentConfig. It reports whether anything changed.
func (c *Client) SetPaused(ctx context.Context, name string, paused bool) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		if st.DC.Spec.Paused == paused {
			changed = false
			return nil
		}
		dc := st.DC.DeepCopy()
		dc.Spec.Paused = paused
		if _, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Update(ctx, dc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		changed = true
		return nil
	})
	return changed, err
}
