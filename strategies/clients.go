package strategies

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
)

// ReplicaSets reads and scales the revisions of one namespace. Scaling goes through the
// scale subresource, which is what the deployer's role grants.
type ReplicaSets interface {
	GetReplicaSet(ctx context.Context, name string) (*appsv1.ReplicaSet, error)
	// ScaleReplicaSet sets spec.replicas. Setting the current value is a no-op.
	ScaleReplicaSet(ctx context.Context, name string, replicas int32) error
}

// Pods lists and watches the pods of one namespace.
type Pods interface {
	ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Clients are the narrow clients a strategy is built over.
type Clients interface {
	ReplicaSets
	Pods
}

// KubeClients implements Clients for one namespace over a Kubernetes clientset.
type KubeClients struct {
	Client    kubernetes.Interface
	Namespace string
	// Defer, when set, routes scale-downs through BeforeScaleDown DeferPolicies.
	Defer *DeferredScaleDowns
}

var _ Clients = &KubeClients{}

// NewKubeClients returns the Clients of namespace.
func NewKubeClients(client kubernetes.Interface, namespace string) *KubeClients {
	return &KubeClients{Client: client, Namespace: namespace}
}

// GetReplicaSet reads a ReplicaSet.
func (c *KubeClients) GetReplicaSet(ctx context.Context, name string) (*appsv1.ReplicaSet, error) {
	return c.Client.AppsV1().ReplicaSets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
}

// ScaleReplicaSet sets the replicas through the scale subresource in one request (again
// after a transient error, see apiretry.Do): an
// update without a resourceVersion, which the apiserver applies to the current object
// (the ReplicaSet strategy allows unconditional updates), as `kubectl scale` does. A
// read first would cost a round trip on every step of a rollout; the caller already
// knows whether the value changes (see Scale).
func (c *KubeClients) ScaleReplicaSet(ctx context.Context, name string, replicas int32) error {
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
	return apiretry.Do(ctx, func() error {
		_, err := c.Client.AppsV1().ReplicaSets(c.Namespace).UpdateScale(ctx, name, scale, metav1.UpdateOptions{})
		return err
	})
}

// IsWatchListSemanticsUnSupported reports whether Client cannot stream the initial list
// of a watch (WatchList), like the fake clientset of unit tests. A PodTracker over these
// clients then lists and watches instead.
func (c *KubeClients) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Client)
}

// ListPods lists pods.
func (c *KubeClients) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return c.Client.CoreV1().Pods(c.Namespace).List(ctx, opts)
}

// WatchPods watches pods.
func (c *KubeClients) WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.Client.CoreV1().Pods(c.Namespace).Watch(ctx, opts)
}

// Scale sets the replicas of rs, printing a progress line when they change, and returns
// rs with the new spec.replicas. Scaling to the current value is a no-op.
func Scale(ctx context.Context, c ReplicaSets, out *Progress, rs *appsv1.ReplicaSet, replicas int32) (*appsv1.ReplicaSet, error) {
	current := Replicas(rs)
	if current == replicas {
		return rs, nil
	}
	direction := "up"
	if replicas < current {
		direction = "down"
	}
	if d, ok := c.(ScaleDownDeferrer); ok && replicas < current {
		deferred, err := d.DeferScaleDown(ctx, rs, replicas, out)
		if err != nil {
			return nil, err
		}
		if deferred {
			scaled := rs.DeepCopy()
			scaled.Spec.Replicas = &replicas
			return scaled, nil
		}
	}
	out.Printf("Scaling %s %s to %d", rs.Name, direction, replicas)
	if err := c.ScaleReplicaSet(ctx, rs.Name, replicas); err != nil {
		return nil, cancelled(ctx, fmt.Errorf("scaling %s to %d: %w", rs.Name, replicas, err))
	}
	scaled := rs.DeepCopy()
	scaled.Spec.Replicas = &replicas
	return scaled, nil
}

// Replicas is spec.replicas of rs, 1 when unset (the API default), 0 for a nil rs.
func Replicas(rs *appsv1.ReplicaSet) int32 {
	switch {
	case rs == nil:
		return 0
	case rs.Spec.Replicas == nil:
		return 1
	}
	return *rs.Spec.Replicas
}

// PodWatchSelector is the label selector of the pod watch of a rollout to rs: every pod
// of its DeploymentConfig (stagehand.dev/config=<name>) when the pod template carries that
// label, else every pod of a Stagehand revision in the namespace (stagehand.dev/revision
// exists). Pods are then matched to each revision by the revision's own selector.
func PodWatchSelector(rs *appsv1.ReplicaSet) string {
	if name := rs.Spec.Template.Labels[v1alpha1.ConfigLabel]; name != "" {
		return v1alpha1.ConfigLabel + "=" + name
	}
	return v1alpha1.RevisionLabel
}
