package tree

import (
	"fmt"
	"sort"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// receiptNodes are the rows of a revision's notification receipts (docs/notifications.md),
// by event and receiver: to whom, the phase, when it was sent, the answer's code and the
// notifier.
func receiptNodes(receipts []*v1alpha1.RolloutDelivery) []*treeNode {
	sorted := append([]*v1alpha1.RolloutDelivery(nil), receipts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp) ||
			(sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) && sorted[i].Name < sorted[j].Name)
	})
	var out []*treeNode
	for _, d := range sorted {
		n := &treeNode{name: d.Spec.Receiver, kind: "Notified " + string(d.Spec.Event), status: string(d.Status.Phase), mark: markProgress}
		if n.status == "" {
			n.status = string(v1alpha1.DeliveryPending)
		}
		switch d.Status.Phase {
		case v1alpha1.DeliveryDelivered:
			n.mark = markOK
		case v1alpha1.DeliveryFailed:
			n.mark = markFailed
		}
		switch {
		case d.Status.DeliveredTime != nil:
			n.created = d.Status.DeliveredTime.Time
		case d.Status.LastAttemptTime != nil:
			n.created = d.Status.LastAttemptTime.Time
		}
		if d.Status.ResponseCode != 0 {
			n.info = append(n.info, fmt.Sprintf("answer %d", d.Status.ResponseCode))
		}
		if d.Status.Attempts > 1 {
			n.info = append(n.info, fmt.Sprintf("%d attempts", d.Status.Attempts))
		}
		n.info = append(n.info, "notifier "+d.Spec.Notifier)
		if d.Status.Phase != v1alpha1.DeliveryDelivered && d.Status.Message != "" {
			n.info = append(n.info, d.Status.Message)
		}
		out = append(out, n)
	}
	return out
}
