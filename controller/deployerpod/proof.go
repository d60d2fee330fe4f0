package deployerpod

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// proofGrace is how long after the deployer exited 0 the controller waits for the
// ReplicaSet's status to show the desired replicas available. The deployer waits on the
// pods themselves, and the ReplicaSet controller's status may lag a moment behind them.
const proofGrace = 30 * time.Second

// proveComplete checks DESIGN.md §4 invariant 6 before a revision is Complete: the
// deployer exited 0 AND the revision has its desired replicas available (the ReplicaSet's
// availableReplicas honour minReadySeconds), read from the apiserver, not the cache. It
// returns true when t may be written as it is. When the proof is missing it waits (a
// requeue) for up to proofGrace after the deployer finished, then turns t into a Failed
// transition with reason StrategyEndedWithoutRollout, so that the previous revision keeps
// serving: Stagehand never switches traffic on an exit code alone.
//
// The cached ReplicaSet (rs) is enough when its status already shows the proof: the cache
// only shows what the ReplicaSet controller wrote, after the deployer's scale-up, so it is
// as true as a read from the apiserver a moment earlier would be. Only when the cache
// does not show it is the ReplicaSet read from the apiserver, which saves a request on
// most rollouts (issue 23: requests per rollout).
func (c *Controller) proveComplete(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod, t *phase.Transition) (bool, error) {
	desired, err := revision.DesiredReplicas(rs)
	if err != nil {
		*t = phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonInvalidConfig, Msg: err.Error()}
		return true, nil
	}
	if revision.OfStatefulSet(rs) {
		return c.proveStatefulSet(ctx, rs, pod, t, desired)
	}
	if statusProves(rs, desired) {
		return true, nil
	}
	live, err := revisions.Client{Kube: c.kube}.Get(ctx, rs.Namespace, rs.Name, revision.OfStatefulSet(rs))
	if err != nil {
		return false, fmt.Errorf("reading revision %s to check its rollout: %w", rs.Name, err)
	}
	if statusProves(live, desired) {
		return true, nil
	}
	replicas := specReplicas(live)
	available := live.Status.AvailableReplicas
	if replicas >= desired {
		// The strategy scaled the revision, and the ReplicaSet controller's status is
		// behind: on a busy cluster it can trail the pods by longer than proofGrace.
		// Count the revision's pods themselves, by the rule the deployer waited on.
		if available, err = c.availablePods(ctx, live); err != nil {
			return false, err
		}
		if available >= desired {
			return true, nil
		}
	}
	if wait := podstatus.FinishedAt(pod, v1alpha1.DeployerContainerName).Add(proofGrace).Sub(c.now()); wait > 0 {
		return false, plumbing.RequeueAfter(min(wait, 2*time.Second),
			fmt.Sprintf("the deployer exited 0; waiting for %s to show %d available replicas", rs.Name, desired))
	}
	*t = phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonEndedWithoutRollout, Hooks: t.Hooks,
		Msg: fmt.Sprintf("the deployer exited 0, but revision %s runs %d replicas with %d of %d available: the strategy ended without rolling out, so the previous revision keeps serving",
			rs.Name, replicas, available, desired)}
	return true, nil
}

// statusProves reports whether rs's own status shows the rollout done: scaled to desired,
// that many available, and the status written for the current spec.
func statusProves(rs *appsv1.ReplicaSet, desired int32) bool {
	return specReplicas(rs) >= desired && rs.Status.AvailableReplicas >= desired && rs.Status.ObservedGeneration >= rs.Generation
}

// specReplicas is rs's spec.replicas, 1 when unset (the API's default).
func specReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas != nil {
		return *rs.Spec.Replicas
	}
	return 1
}

// availablePods counts the available pods of revision rs, read from the apiserver (the
// controller caches deployer pods only): the pods its selector matches that it controls.
func (c *Controller) availablePods(ctx context.Context, rs *appsv1.ReplicaSet) (int32, error) {
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return 0, nil //nolint:nilerr // an invalid selector selects nothing: the revision proves nothing
	}
	pods, err := c.kube.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return 0, fmt.Errorf("listing the pods of revision %s to check its rollout: %w", rs.Name, err)
	}
	now := c.now()
	var n int32
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != rs.UID {
			continue
		}
		if ok, _ := podstatus.PodAvailable(pod, rs.Spec.MinReadySeconds, now); ok {
			n++
		}
	}
	return n, nil
}

// nameTaken fails a revision whose deployer pod name is held by a pod that it does not
// own. That pod is never adopted, read or deleted.
func (c *Controller) nameTaken(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	if revision.Phase(rs).IsTerminal() {
		return nil
	}
	return c.transition(ctx, dc, rs, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed,
		Reason: v1alpha1.ReasonDeployerPodNameTaken,
		Msg: fmt.Sprintf("pod %s/%s already exists and is not the deployer pod of revision %s (it has no ownerReference to it); "+
			"Stagehand leaves it alone: rename or delete that pod, then run kubectl stagehand rollout latest %s", pod.Namespace, pod.Name, rs.Name, dc.Name)})
}

// failIfStuck fails the revision of a deployer pod whose container cannot start (a missing
// ConfigMap key, an invalid image name, a pull that keeps failing) once the grace of
// podstatus.DefaultStuckGrace has passed, with the kubelet's reason and message, instead of
// waiting out activeDeadlineSeconds. The pod is kept for inspection. Before the grace runs
// out, a check is scheduled for the moment it does, since a stuck pod sends no updates.
func (c *Controller) failIfStuck(ctx context.Context, key string, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet, pod *corev1.Pod) (bool, error) {
	if pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
		return false, nil
	}
	if reason, msg, stuck := podstatus.StuckContainer(pod, c.now(), podstatus.DefaultStuckGrace); stuck {
		return true, c.transition(ctx, dc, rs, phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: reason,
			Msg: fmt.Sprintf("the deployer pod %s cannot start: %s (the pod is kept for inspection)", pod.Name, msg)})
	}
	if at, ok := podstatus.StuckAt(pod, podstatus.DefaultStuckGrace); ok {
		c.queue.AddAfter(key, at.Sub(c.now())+time.Second)
	}
	return false, nil
}
