package deferrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// EvictionRequest is one request to evict the pod (lifecycle.k8s.io/v1alpha1), with what
// Stagehand's responder says on it (the condition stagehand.dev/DeferSteps).
type EvictionRequest struct {
	Name      string `json:"name"`
	Requester string `json:"requester"`
	Intent    string `json:"intent"`
	// Steps is the condition's reason (Waiting, Running, Completed, Blocked, Canceled,
	// Interrupted) and Message its message, with the last heartbeat.
	Steps   string `json:"steps,omitempty"`
	Message string `json:"message,omitempty"`
	// Failed is the request's Failed condition's message, when it is true.
	Failed string `json:"failed,omitempty"`
}

// evictionRequests are the EvictionRequests of pod, for a pod that names Stagehand as an
// eviction responder; none where the API is not served or may not be read.
func (c *Client) evictionRequests(ctx context.Context, pod *corev1.Pod) []EvictionRequest {
	if !v1alpha1.HasEvictionResponder(pod) {
		return nil
	}
	list, err := c.Kube.LifecycleV1alpha1().EvictionRequests(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []EvictionRequest
	for _, r := range list.Items {
		if t := r.Spec.Target.Pod; t == nil || t.UID != pod.UID {
			continue
		}
		row := EvictionRequest{Name: r.Name, Requester: r.Spec.Requester, Intent: string(r.Spec.Intent)}
		if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.EvictionRequestConditionDeferSteps); cond != nil {
			row.Steps, row.Message = cond.Reason, cond.Message
		}
		if cond := meta.FindStatusCondition(r.Status.Conditions, "Failed"); cond != nil && cond.Status == metav1.ConditionTrue {
			row.Failed = cond.Message
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b EvictionRequest) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// printEvictionRequests writes the pod's EvictionRequests, if any.
func printEvictionRequests(out io.Writer, reqs []EvictionRequest) {
	if len(reqs) == 0 {
		return
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "EVICTION REQUEST\tREQUESTER\tINTENT\tSTEPS\tMESSAGE")
	for _, r := range reqs {
		msg := r.Message
		if r.Failed != "" {
			msg = "Failed: " + r.Failed
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Requester, r.Intent, orDash(r.Steps), orDash(msg))
	}
	_ = w.Flush()
}
