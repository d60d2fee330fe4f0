// Package revisions reads and writes revisions of either kind (api/revision, record.go): a
// ReplicaSet <dc>-<N>, or the ControllerRevision <dc>-<N> of a StatefulSet revision, which
// callers see as its ReplicaSet view. Writers go through it, so that the phase, the cancel
// and the retry of a revision are one code path for both kinds.
package revisions

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Client writes and reads revisions through a clientset.
type Client struct {
	Kube kubernetes.Interface
}

// Create creates the revision rs: a ReplicaSet, or the record of a StatefulSet revision.
func (c Client) Create(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.CreateOptions) (*appsv1.ReplicaSet, error) {
	if !revision.OfStatefulSet(rs) {
		return c.Kube.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, opts)
	}
	cr, err := revision.ToControllerRevision(rs)
	if err != nil {
		return nil, err
	}
	created, err := c.Kube.AppsV1().ControllerRevisions(rs.Namespace).Create(ctx, cr, opts)
	if err != nil {
		return nil, err
	}
	return revision.FromControllerRevision(created)
}

// Update writes rs. A StatefulSet revision's record takes only its metadata: its data is
// immutable, as a ControllerRevision's is, so a changed spec is an error.
func (c Client) Update(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	if !revision.OfStatefulSet(rs) {
		return c.Kube.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, opts)
	}
	if rs.Spec.Replicas != nil && *rs.Spec.Replicas != 0 {
		return nil, fmt.Errorf("revision %s of a StatefulSet runs no pod of its own: its replicas stay 0", rs.Name)
	}
	cr, err := revision.ToControllerRevision(rs)
	if err != nil {
		return nil, err
	}
	updated, err := c.Kube.AppsV1().ControllerRevisions(rs.Namespace).Update(ctx, cr, opts)
	if err != nil {
		return nil, err
	}
	return revision.FromControllerRevision(updated)
}

// Delete deletes the revision rs.
func (c Client) Delete(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.DeleteOptions) error {
	if !revision.OfStatefulSet(rs) {
		return c.Kube.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, opts)
	}
	return c.Kube.AppsV1().ControllerRevisions(rs.Namespace).Delete(ctx, rs.Name, opts)
}

// Get reads revision name of a DeploymentConfig, of the kind stateful says.
func (c Client) Get(ctx context.Context, namespace, name string, stateful bool) (*appsv1.ReplicaSet, error) {
	if !stateful {
		return c.Kube.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	cr, err := c.Kube.AppsV1().ControllerRevisions(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if cr.Labels[v1alpha1.WorkloadLabel] != v1alpha1.WorkloadStatefulSet {
		return nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	return revision.FromControllerRevision(cr)
}

// GetAny reads revision name when its kind is unknown (the deployer knows only the name):
// the ReplicaSet, else the StatefulSet revision's record.
func (c Client) GetAny(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rs, err := c.Get(ctx, namespace, name, false)
	if !apierrors.IsNotFound(err) {
		return rs, err
	}
	return c.Get(ctx, namespace, name, true)
}

// StatefulSelector is the label selector of the ControllerRevisions that record the
// StatefulSet revisions of DC config.
func StatefulSelector(config string) string {
	return v1alpha1.ConfigLabel + "=" + config + "," + v1alpha1.WorkloadLabel + "=" + v1alpha1.WorkloadStatefulSet
}

// List lists the revisions of config, of the kind stateful says.
func (c Client) List(ctx context.Context, namespace, config string, stateful bool) ([]appsv1.ReplicaSet, error) {
	if !stateful {
		list, err := c.Kube.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=" + config})
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	crs, err := c.Kube.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{LabelSelector: StatefulSelector(config)})
	if err != nil {
		return nil, err
	}
	out := make([]appsv1.ReplicaSet, 0, len(crs.Items))
	for i := range crs.Items {
		view, err := revision.FromControllerRevision(&crs.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *view)
	}
	return out, nil
}
