package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// What the plugin reads of a DeploymentConfig that runs on a StatefulSet
// (docs/statefulsets.md): its revisions are ControllerRevisions, read as ReplicaSet views
// with no pods of their own, and its pods are the StatefulSet's.

// revisionWatches open the watches that see a DC's revisions change: its ReplicaSets, or
// a StatefulSet DC's ControllerRevisions and its StatefulSet, whose status moves as its
// pods move to the new template.
func (c *Client) revisionWatches(ctx context.Context, name string, stateful bool) []func() (watch.Interface, error) {
	if !stateful {
		byConfig := metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=" + name}
		return []func() (watch.Interface, error){
			func() (watch.Interface, error) { return c.Kube.AppsV1().ReplicaSets(c.Namespace).Watch(ctx, byConfig) },
		}
	}
	return []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return c.Kube.AppsV1().ControllerRevisions(c.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: revisions.StatefulSelector(name)})
		},
		func() (watch.Interface, error) {
			return c.Kube.AppsV1().StatefulSets(c.Namespace).Watch(ctx,
				metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		},
	}
}

// isStateful reports whether DC name runs on a StatefulSet; a DC that cannot be read is
// taken for a ReplicaSet DC (Follow's next read says what is wrong).
func (c *Client) isStateful(ctx context.Context, name string) bool {
	dc, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	return err == nil && dc.Spec.StatefulSet != nil
}

// readyPods counts the ready pods of revision rs: a ReplicaSet's own count, or the
// StatefulSet's pods that run a StatefulSet revision's template (its view's selector),
// none while the revision's template hash is not known yet.
func (c *Client) readyPods(ctx context.Context, rs *appsv1.ReplicaSet) (int32, error) {
	if !revision.OfStatefulSet(rs) {
		return rs.Status.ReadyReplicas, nil
	}
	if revision.TemplateHash(rs) == "" {
		return 0, nil
	}
	pods, err := c.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(rs.Spec.Selector)})
	if err != nil {
		return 0, fmt.Errorf("listing the pods of revision %s: %w", rs.Name, err)
	}
	var n int32
	for i := range pods.Items {
		if ready, _ := podstatus.PodAvailable(&pods.Items[i], 0, time.Time{}); ready {
			n++
		}
	}
	return n, nil
}
