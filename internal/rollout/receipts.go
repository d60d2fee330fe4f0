package rollout

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Receipt is what a RolloutNotifier sent about a revision, to whom, when, and the answer
// (docs/notifications.md).
type Receipt struct {
	Notifier string       `json:"notifier"`
	Receiver string       `json:"receiver"`
	Event    string       `json:"event"`
	Phase    string       `json:"phase"`
	Code     int32        `json:"code,omitempty"`
	Attempts int32        `json:"attempts,omitempty"`
	Sent     *metav1.Time `json:"sent,omitempty"`
}

// receipts are the DC's notification receipts by revision name. A cluster without
// notifiers, or a user who may not list receipts, has none: history shows no column then.
func (c *Client) receipts(ctx context.Context, name string) map[string][]Receipt {
	list, err := c.Stagehand.StagehandV1alpha1().RolloutDeliveries(c.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.ConfigLabel + "=" + name})
	if err != nil {
		return nil
	}
	out := map[string][]Receipt{}
	for _, d := range list.Items {
		sent := d.Status.DeliveredTime
		if sent == nil {
			sent = d.Status.LastAttemptTime
		}
		out[d.Spec.Revision] = append(out[d.Spec.Revision], Receipt{Notifier: d.Spec.Notifier, Receiver: d.Spec.Receiver,
			Event: string(d.Spec.Event), Phase: string(d.Status.Phase), Code: d.Status.ResponseCode, Attempts: d.Status.Attempts, Sent: sent})
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool {
			return rs[i].Receiver+"/"+rs[i].Event < rs[j].Receiver+"/"+rs[j].Event
		})
	}
	return out
}

// NotifiedText sums up a revision's receipts for the history table: per receiver, the
// events and the last answer, "ops: Started 200, Complete 200".
func NotifiedText(receipts []Receipt) string {
	var parts []string
	byReceiver := map[string][]string{}
	var order []string
	for _, r := range receipts {
		if _, seen := byReceiver[r.Receiver]; !seen {
			order = append(order, r.Receiver)
		}
		what := r.Event + " " + r.Phase
		if r.Code != 0 {
			what = fmt.Sprintf("%s %d", r.Event, r.Code)
			if r.Phase != string(v1alpha1.DeliveryDelivered) {
				what += " " + r.Phase
			}
		}
		byReceiver[r.Receiver] = append(byReceiver[r.Receiver], what)
	}
	for _, rc := range order {
		parts = append(parts, rc+": "+strings.Join(byReceiver[rc], ", "))
	}
	return strings.Join(parts, "; ")
}
