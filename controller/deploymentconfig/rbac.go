package deploymentconfig

import (
	"context"
	"fmt"
	"sync"
	"time"

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

	if _, err := c.saLister.ServiceAccounts(ns).Get(name); apierrors.IsNotFound(err) && !c.access.recent(ns, "ServiceAccount") {
		sa := &corev1.ServiceAccount{ObjectMeta: objMeta}
		_, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, plumbing.CreateOptions())
		switch {
		case err == nil:
			c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventDeployerAccessCreated, v1alpha1.MsgDeployerAccessCreated, "ServiceAccount", name)
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace is being deleted, its DCs with it: no deployer will run there.
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating ServiceAccount %s/%s for deployer pods: %w", ns, name, err)
		}
		c.access.ensured(ns, "ServiceAccount")
	}

	if _, err := c.rbLister.RoleBindings(ns).Get(name); apierrors.IsNotFound(err) && !c.access.recent(ns, "RoleBinding") {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: *objMeta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.DeployerClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		_, err := c.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, plumbing.CreateOptions())
		switch {
		case err == nil:
			c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventDeployerAccessCreated, v1alpha1.MsgDeployerAccessCreated, "RoleBinding", name)
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace is being deleted, its DCs with it: no deployer will run there.
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating RoleBinding %s/%s for deployer pods: %w", ns, name, err)
		}
		c.access.ensured(ns, "RoleBinding")
	}
	return nil
}

// accessCacheLag is how long the controller trusts its own create (or AlreadyExists, or
// the refusal of a terminating namespace) of a namespace's deployer ServiceAccount or
// RoleBinding over informers that do not show it. Under load, watch events arrive seconds
// after a create, and every DC of the namespace synced meanwhile created them again. When
// a namespace with many DCs was deleted, its RoleBinding went first, and each DC's sync
// tried to create it again and failed, retried with back-off: in the many-rollouts bench
// the deletion of the namespace of 300 DCs made 342 refused RoleBinding creates.
const accessCacheLag = 30 * time.Second

// accessMemo remembers, per namespace and kind, when the controller last made sure the
// deployer's object exists. A deletion that the informers report forgets it at once, so
// the object is created again.
type accessMemo struct {
	mu   sync.Mutex
	seen map[string]time.Time
	now  func() time.Time
}

func (m *accessMemo) ensured(ns, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]time.Time{}
	}
	m.seen[ns+"/"+kind] = m.clock()
}

// recent reports whether ns's kind was ensured within accessCacheLag, and forgets older
// entries.
func (m *accessMemo) recent(ns, kind string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.seen[ns+"/"+kind]
	if ok && m.clock().Sub(at) >= accessCacheLag {
		delete(m.seen, ns+"/"+kind)
		return false
	}
	return ok
}

func (m *accessMemo) forget(ns, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, ns+"/"+kind)
}

func (m *accessMemo) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}
