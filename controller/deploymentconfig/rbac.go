package deploymentconfig

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// managedByLabel marks the objects the controller creates outside of revisions.
const managedByLabel = "app.kubernetes.io/managed-by"

// ensureDeployerAccess makes sure the DC's namespace has the stagehand-deployer
// ServiceAccount and the RoleBinding of it to the stagehand-deployer ClusterRole
// (DESIGN.md §9). It creates what is missing and leaves existing objects alone, so a
// user's edits stand; a deleted one is created again.
func (c *Controller) ensureDeployerAccess(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	ns := dc.Namespace
	name := v1alpha1.DeployerServiceAccountName
	objMeta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{managedByLabel: plumbing.FieldManager}}

	if _, err := c.saLister.ServiceAccounts(ns).Get(name); apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: objMeta}
		_, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, plumbing.CreateOptions())
		switch {
		case err == nil:
			c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventDeployerAccessCreated, v1alpha1.MsgDeployerAccessCreated, "ServiceAccount", name)
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating ServiceAccount %s/%s for deployer pods: %w", ns, name, err)
		}
	}

	if _, err := c.rbLister.RoleBindings(ns).Get(name); apierrors.IsNotFound(err) {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: *objMeta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.DeployerClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		_, err := c.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, plumbing.CreateOptions())
		switch {
		case err == nil:
			c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventDeployerAccessCreated, v1alpha1.MsgDeployerAccessCreated, "RoleBinding", name)
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating RoleBinding %s/%s for deployer pods: %w", ns, name, err)
		}
	}
	return nil
}
