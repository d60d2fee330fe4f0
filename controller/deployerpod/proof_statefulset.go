package deployerpod

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/phase"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// proveStatefulSet is proveComplete for a StatefulSet revision (docs/statefulsets.md): its
// StatefulSet, read from the apiserver, holds the revision's template, its status has
// observed that, and desired pods run that template and are available.
func (c *Controller) proveStatefulSet(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod, t *phase.Transition, desired int32) (bool, error) {
	config := revision.OwnerConfig(rs)
	set, err := c.kube.AppsV1().StatefulSets(rs.Namespace).Get(ctx, config, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading StatefulSet %s to check the rollout of %s: %w", config, rs.Name, err)
	}
	if statefulSetProves(set, rs, desired) {
		return true, nil
	}
	if wait := podstatus.FinishedAt(pod, v1alpha1.DeployerContainerName).Add(proofGrace).Sub(c.now()); wait > 0 {
		return false, plumbing.RequeueAfter(min(wait, 2*time.Second),
			fmt.Sprintf("the deployer exited 0; waiting for StatefulSet %s to show %d available pods of %s", config, desired, rs.Name))
	}
	*t = phase.Transition{Phase: v1alpha1.RevisionPhaseFailed, Reason: v1alpha1.ReasonEndedWithoutRollout, Hooks: t.Hooks,
		Msg: fmt.Sprintf("the deployer exited 0, but StatefulSet %s has %d of %d pods on the template of %s and %d available: the strategy ended without rolling out, so the previous revision keeps serving",
			config, set.Status.UpdatedReplicas, desired, rs.Name, set.Status.AvailableReplicas)}
	return true, nil
}

// statefulSetProves reports whether set's status shows revision rs rolled out to desired
// available pods.
func statefulSetProves(set *appsv1.StatefulSet, rs *appsv1.ReplicaSet, desired int32) bool {
	n, _ := revision.Number(rs)
	return set.Annotations[v1alpha1.StatefulSetRevisionAnnotation] == strconv.FormatInt(n, 10) &&
		set.Status.ObservedGeneration >= set.Generation &&
		set.Status.UpdatedReplicas >= desired && set.Status.AvailableReplicas >= desired &&
		set.Spec.Replicas != nil && *set.Spec.Replicas >= desired
}
