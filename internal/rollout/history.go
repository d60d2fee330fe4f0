package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// HistoryEntry is one revision in a DC's history.
type HistoryEntry struct {
	Revision int64  `json:"revision"`
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	// Reason is the outcome of a terminal revision: "<Reason>: <message>".
	Reason string `json:"reason,omitempty"`
	// Cause says why the revision was created, e.g. "ConfigChange" or "Rollback to 2".
	Cause string `json:"cause"`
	// Images are the images of the revision's containers, in order.
	Images []string `json:"images"`
	// Replicas is the revision's current replica count.
	Replicas int32       `json:"replicas"`
	Created  metav1.Time `json:"created"`
	// Notifications are the RolloutNotifiers' receipts of the revision.
	Notifications []Receipt `json:"notifications,omitempty"`
}

// History lists the DC's revisions that still exist, oldest first.
func (c *Client) History(ctx context.Context, name string) ([]HistoryEntry, error) {
	st, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(st.Revisions))
	receipts := c.receipts(ctx, name)
	for _, rs := range st.Revisions {
		n, _ := revision.Number(rs)
		e := HistoryEntry{
			Revision: n,
			Name:     rs.Name,
			Phase:    string(revision.Phase(rs)),
			Reason:   revision.StatusReasonText(rs),
			Cause:    causeText(rs.Annotations),
			Images:   images(rs.Spec.Template.Spec.Containers),
			Created:  rs.CreationTimestamp,

			Notifications: receipts[rs.Name],
		}
		if rs.Spec.Replicas != nil {
			e.Replicas = *rs.Spec.Replicas
		}
		out = append(out, e)
	}
	return out, nil
}

// causeText renders a revision's cause annotations: revision.CauseText, or "unknown".
func causeText(annotations map[string]string) string {
	if cause := revision.CauseText(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}); cause != "" {
		return cause
	}
	return "unknown"
}

func images(containers []corev1.Container) []string {
	out := make([]string, 0, len(containers))
	for _, c := range containers {
		out = append(out, c.Image)
	}
	return out
}

// RevisionTemplate is the pod template that revision n ran, from its snapshot.
func (c *Client) RevisionTemplate(ctx context.Context, name string, n int64) (*corev1.PodTemplateSpec, error) {
	st, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	rs := st.Revision(n)
	if rs == nil {
		return nil, fmt.Errorf("revision %d of %s does not exist (kept: %s)", n, st.Name(), st.summary())
	}
	spec, err := revision.Snapshot(rs)
	if err != nil {
		return nil, err
	}
	return &spec.Template, nil
}

// StatusText is a phase with its reason for a table: "Failed (Cancelled)".
func (e HistoryEntry) StatusText() string {
	if e.Reason == "" || e.Phase == string(v1alpha1.RevisionPhaseComplete) {
		return e.Phase
	}
	reason, _, _ := strings.Cut(e.Reason, ":")
	return fmt.Sprintf("%s (%s)", e.Phase, reason)
}
