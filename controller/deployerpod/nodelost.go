package deployerpod

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// nodeNotReadyRefresh is how often the "NotReady for ..." message of a revision whose
// deployer's node is not Ready is brought up to date, while it stays so.
const nodeNotReadyRefresh = 10 * time.Second

// watchNodes enqueues the revisions whose deployer pods run on a node whose readiness
// changed, or that was deleted.
func (c *Controller) watchNodes(nodes coreinformers.NodeInformer) error {
	c.nodeLister = nodes.Lister()
	c.loop.Synced = append(c.loop.Synced, nodes.Informer().HasSynced)
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if nodeReady(old.(*corev1.Node)) != nodeReady(cur.(*corev1.Node)) {
				c.enqueueDeployersOn(cur.(*corev1.Node).Name)
			}
		},
		DeleteFunc: func(obj any) {
			if node, ok := plumbing.UnwrapTombstone(obj).(*corev1.Node); ok {
				c.enqueueDeployersOn(node.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("adding the node handler: %w", err)
	}
	return nil
}

func (c *Controller) enqueueDeployersOn(node string) {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		if pod.Spec.NodeName == node {
			c.enqueuePodRevision(pod)
		}
	}
}

// nodeReady is the status of node's Ready condition; a node without one is not ready.
func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	if cond := readyCondition(node); cond != nil {
		return cond.Status
	}
	return corev1.ConditionUnknown
}

// checkNode looks after a running deployer pod's node. While the node is not Ready,
// nothing says whether the deployer still runs: the revision says so (a waiting reason,
// brought up to date every nodeNotReadyRefresh), and nothing else happens, since a second
// deployer must never start beside one that may still run. When the node is deleted, the
// machine and the deployer with it are gone: the revision fails with DeployerNodeLost, and
// the pod, which no kubelet will ever stop, is deleted at once. It reports whether the
// revision failed.
func (c *Controller) checkNode(ctx context.Context, key string, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, pod *corev1.Pod) (bool, error) {
	if c.nodeLister == nil || pod.Spec.NodeName == "" || podstatus.Finished(pod) {
		return false, c.clearNodeWaiting(ctx, rs)
	}
	node, err := c.nodeLister.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		node, err = c.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, c.nodeLost(ctx, dc, rs, pod, fmt.Sprintf("node %s was deleted", pod.Spec.NodeName))
		}
	}
	if err != nil {
		return false, fmt.Errorf("reading the node of deployer pod %s: %w", pod.Name, err)
	}
	cond := readyCondition(node)
	if cond == nil || cond.Status == corev1.ConditionTrue {
		return false, c.clearNodeWaiting(ctx, rs)
	}
	since := c.now().Sub(cond.LastTransitionTime.Time).Truncate(time.Second)
	msg := fmt.Sprintf("deployer pod %s: node %s NotReady for %s", pod.Name, node.Name, since)
	if err := c.markWaiting(ctx, rs, v1alpha1.ReasonDeployerNodeNotReady, msg); err != nil {
		return false, err
	}
	c.queue.AddAfter(key, nodeNotReadyRefresh)
	return false, nil
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// nodeLost fails the revision with DeployerNodeLost and deletes its deployer pod with no
// grace period: the pod's node is gone, so no kubelet will ever confirm that it stopped
// (the pod garbage collector would do the same a minute later).
func (c *Controller) nodeLost(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, pod *corev1.Pod, why string) error {
	t := phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonDeployerNodeLost,
		Msg: fmt.Sprintf("deployer pod %s: %s", pod.Name, why)}
	if err := c.transition(ctx, dc, rs, t); err != nil {
		return err
	}
	err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting deployer pod %s of the lost node: %w", pod.Name, err)
	}
	return nil
}

// clearNodeWaiting removes a DeployerNodeNotReady wait once the node is Ready again.
func (c *Controller) clearNodeWaiting(ctx context.Context, rs *appsv1.ReplicaSet) error {
	if reason, _ := revision.Waiting(rs); reason != v1alpha1.ReasonDeployerNodeNotReady {
		return nil
	}
	cleared := rs.DeepCopy()
	delete(cleared.Annotations, v1alpha1.WaitingAnnotation)
	updated, err := revisions.Client{Kube: c.kube}.Update(ctx, cleared, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("clearing the node wait of revision %s: %w", rs.Name, err)
	}
	c.writes.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
	*rs = *updated
	return nil
}

// goneReason is why a revision whose deployer pod went away failed: DeployerNodeLost
// when the pod's node was not Ready when last seen, else DeployerPodGone.
func goneReason(rs *appsv1.ReplicaSet) (reason, msg string) {
	if r, m := revision.Waiting(rs); r == v1alpha1.ReasonDeployerNodeNotReady {
		return v1alpha1.ReasonDeployerNodeLost, m + ", and the pod is gone"
	}
	return v1alpha1.ReasonDeployerPodGone, "deployer pod no longer exists"
}
