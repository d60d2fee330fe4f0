package deploymentconfig

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// holdPartition is the partition under which no pod of any ordinal moves
// (strategies/statefulset.HoldPartition: the deployer lowers it).
const holdPartition int32 = 1<<31 - 1

// statefulSetRevision is the revision number whose template StatefulSet set holds (the
// annotation the controller writes with the template), 0 for none.
func statefulSetRevision(set *appsv1.StatefulSet) int64 {
	n, _ := strconv.ParseInt(set.Annotations[v1alpha1.StatefulSetRevisionAnnotation], 10, 64)
	return n
}

// newStatefulSet is the StatefulSet of dc, holding the template of revision rs, with no
// pod to move until the deployer lowers the partition, and 0 replicas until it scales.
func newStatefulSet(dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet) *appsv1.StatefulSet {
	n, _ := revision.Number(rs)
	w := dc.Spec.StatefulSet
	zero, hold := int32(0), holdPartition
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: dc.Name, Namespace: dc.Namespace,
			Labels:          map[string]string{v1alpha1.ConfigLabel: dc.Name},
			Annotations:     map[string]string{v1alpha1.StatefulSetRevisionAnnotation: strconv.FormatInt(n, 10)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dc, revision.ConfigKind)},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             &zero,
			Selector:                             revision.WorkloadSelector(rs),
			Template:                             *rs.Spec.Template.DeepCopy(),
			ServiceName:                          w.ServiceName,
			PodManagementPolicy:                  appsv1.PodManagementPolicyType(w.PodManagementPolicy),
			VolumeClaimTemplates:                 w.VolumeClaimTemplates,
			PersistentVolumeClaimRetentionPolicy: w.PersistentVolumeClaimRetentionPolicy,
			MinReadySeconds:                      dc.Spec.MinReadySeconds,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &hold}},
		},
	}
}

// holdTemplateOf writes the template of revision latest (not terminal) into the
// StatefulSet of dc, creating it for the first revision, with the partition held so that
// no pod moves before the deployer says so. Once the StatefulSet's status names the
// template's hash, the revision's record keeps it (TemplateHashAnnotation).
func (c *Controller) holdTemplateOf(ctx context.Context, dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) error {
	n, _ := revision.Number(latest)
	sets := c.kube.AppsV1().StatefulSets(dc.Namespace)
	set, err := c.stsLister.StatefulSets(dc.Namespace).Get(dc.Name)
	if apierrors.IsNotFound(err) {
		if _, err := sets.Create(ctx, newStatefulSet(dc, latest), plumbing.CreateOptions()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating StatefulSet %s: %w", dc.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(set); ref == nil || ref.UID != dc.UID {
		return plumbing.Fatal(fmt.Errorf("StatefulSet %s exists and does not belong to DeploymentConfig %s: take it over with kubectl stagehand adopt statefulset/%s, or give the DeploymentConfig another name",
			dc.Name, dc.Name, dc.Name))
	}
	if statefulSetRevision(set) < n {
		held := set.DeepCopy()
		held.Spec.Template = *latest.Spec.Template.DeepCopy()
		held.Annotations[v1alpha1.StatefulSetRevisionAnnotation] = strconv.FormatInt(n, 10)
		hold := holdPartition
		held.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &hold}}
		if _, err := sets.Update(ctx, held, plumbing.UpdateOptions()); err != nil {
			return fmt.Errorf("writing the template of revision %d into StatefulSet %s: %w", n, dc.Name, err)
		}
		return nil
	}
	return nil
}

// recordHeldHash records, on the revision whose template StatefulSet <dc> holds, the
// template's hash once the StatefulSet's status names it: during the rollout, or after it
// for a rollout that ended before the status caught up, and after a rollback.
func (c *Controller) recordHeldHash(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) error {
	set, err := c.stsLister.StatefulSets(dc.Namespace).Get(dc.Name)
	if err != nil || metav1.GetControllerOfNoCopy(set) == nil || metav1.GetControllerOfNoCopy(set).UID != dc.UID {
		return nil //nolint:nilerr // no StatefulSet of this DC yet: nothing to record
	}
	held := revision.Find(revs, statefulSetRevision(set))
	if held == nil || revision.TemplateHash(held) != "" || set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == "" {
		return nil
	}
	return c.recordTemplateHash(ctx, held, set.Status.UpdateRevision)
}

// recordTemplateHash writes hash into the record of revision rs.
func (c *Controller) recordTemplateHash(ctx context.Context, rs *appsv1.ReplicaSet, hash string) error {
	marked := rs.DeepCopy()
	marked.Annotations[v1alpha1.TemplateHashAnnotation] = hash
	updated, err := revisions.Client{Kube: c.kube}.Update(ctx, marked, plumbing.UpdateOptions())
	if err != nil {
		return fmt.Errorf("recording the template hash of %s: %w", rs.Name, err)
	}
	c.rsWrites.Wrote(rs.Namespace+"/"+rs.Name, rs.ResourceVersion, updated.ResourceVersion)
	return nil
}

// settleStatefulSet is step 4 for a DC with spec.statefulSet (invariant 4): the StatefulSet
// runs the newest Complete revision's template on spec.replicas pods. After a failed
// revision that template is written back, and every pod of the failed template that is
// not Ready is deleted, so that the StatefulSet controller creates it again on the restored
// template: Kubernetes alone leaves it stuck (kubernetes#67250). Ready pods of the failed
// template are walked back by the StatefulSet controller, highest ordinal first. Claims
// are never deleted.
func (c *Controller) settleStatefulSet(ctx context.Context, dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) error {
	set, err := c.stsLister.StatefulSets(dc.Namespace).Get(dc.Name)
	if apierrors.IsNotFound(err) {
		return nil // the first revision failed before the StatefulSet existed
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(set, dc) {
		return nil // not yet adopted, or given back by eject
	}
	serving := revision.NewestComplete(revs)
	want := set.DeepCopy()
	zero := int32(0)
	want.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: &zero}
	want.Spec.Replicas = dc.Spec.Replicas
	if serving == nil {
		// No revision ever completed: nothing serves, and the StatefulSet goes to 0, unless
		// its claims would go with the pods (whenScaled: Delete): no rollback deletes a claim.
		if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			want.Spec.Replicas = &zero
		} else {
			want.Spec.Replicas = set.Spec.Replicas
		}
	} else if n, _ := revision.Number(serving); statefulSetRevision(set) != n {
		want.Spec.Template = *serving.Spec.Template.DeepCopy()
		want.Annotations[v1alpha1.StatefulSetRevisionAnnotation] = strconv.FormatInt(n, 10)
	}
	c.deferSetScaleDown(set, want)
	if !equalSettled(set, want) {
		if _, err := c.kube.AppsV1().StatefulSets(dc.Namespace).Update(ctx, want, plumbing.UpdateOptions()); err != nil {
			return fmt.Errorf("restoring StatefulSet %s to the serving revision: %w", dc.Name, err)
		}
		return nil // its status, observing the write, brings the DC back
	}
	failed := revision.TemplateHash(latest)
	if serving == nil || latest == serving || failed == "" || failed == revision.TemplateHash(serving) {
		return nil
	}
	// A stuck pod deleted before the StatefulSet controller has seen the restored template
	// would come back on the failed one, and stay stuck.
	if set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == failed {
		return plumbing.RequeueAfter(time.Second, fmt.Sprintf("waiting for StatefulSet %s to observe the restored template", dc.Name))
	}
	deleted, err := c.deleteStuckPods(ctx, dc, set, failed)
	if err != nil || deleted == 0 {
		return err
	}
	// Look again: a pod that was not Ready yet, not stuck, may become stuck later.
	return plumbing.RequeueAfter(2*time.Second, fmt.Sprintf("%d pod(s) of StatefulSet %s replaced; checking the rest", deleted, dc.Name))
}

// deleteStuckPods deletes the StatefulSet's pods of the failed template hash that are not
// Ready (and not already going).
func (c *Controller) deleteStuckPods(ctx context.Context, dc *v1alpha1.DeploymentConfig, set *appsv1.StatefulSet, hash string) (deleted int, err error) {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return 0, plumbing.Fatal(err)
	}
	req, _ := labels.NewRequirement(appsv1.ControllerRevisionHashLabelKey, "=", []string{hash})
	pods, err := c.kube.CoreV1().Pods(dc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.Add(*req).String()})
	if err != nil {
		return 0, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !metav1.IsControlledBy(p, set) {
			continue
		}
		if ready, _ := podstatus.PodAvailable(p, 0, p.CreationTimestamp.Time); ready {
			continue
		}
		uid := p.UID
		err := c.kube.CoreV1().Pods(dc.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting pod %s, stuck on the failed template: %w", p.Name, err)
		}
		deleted++
		c.recorder.Eventf(dc, corev1.EventTypeNormal, v1alpha1.EventStuckPodReplaced, v1alpha1.MsgStuckPodReplaced, p.Name, hash)
	}
	return deleted, nil
}

// deferSetScaleDown turns a lowering of want's replicas into a request to the DeferPolicy
// controller when a BeforeScaleDown policy selects the pods: it lowers them one ordinal at
// a time, highest first, each after that pod's steps (docs/statefulsets.md, "Scale-down").
// Otherwise it withdraws any request.
func (c *Controller) deferSetScaleDown(set, want *appsv1.StatefulSet) {
	to := *want.Spec.Replicas
	if to < *set.Spec.Replicas && c.deferScaleDown(set.Namespace, want.Spec.Template.Labels) {
		v1alpha1.SetDeferScaleDownRequest(want, to)
		want.Spec.Replicas = set.Spec.Replicas
		return
	}
	v1alpha1.ClearDeferScaleDownRequest(want)
}

// holdFrozenSet withdraws the BeforeScaleDown request of a frozen DC's StatefulSet that no
// pod was chosen for yet: onFailure: Freeze leaves the replicas where they are. A choice
// already made is carried out (DESIGN.md §4 invariant 8).
func (c *Controller) holdFrozenSet(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	set, err := c.stsLister.StatefulSets(dc.Namespace).Get(dc.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, _, chose := v1alpha1.DeferScaleDownChoiceOf(set); chose || !v1alpha1.HasDeferScaleDownRequest(set) {
		return nil
	}
	held := set.DeepCopy()
	v1alpha1.ClearDeferScaleDownRequest(held)
	if _, err := c.kube.AppsV1().StatefulSets(dc.Namespace).Update(ctx, held, plumbing.UpdateOptions()); err != nil {
		return fmt.Errorf("withdrawing the BeforeScaleDown request of frozen StatefulSet %s: %w", set.Name, err)
	}
	return nil
}

// equalSettled reports whether set already has want's replicas, partition, template and
// scale-down request.
func equalSettled(set, want *appsv1.StatefulSet) bool {
	setTo, setAsked := v1alpha1.DeferScaleDownRequestOf(set)
	wantTo, wantAsked := v1alpha1.DeferScaleDownRequestOf(want)
	return setTo == wantTo && setAsked == wantAsked && v1alpha1.HasDeferScaleDownRequest(set) == v1alpha1.HasDeferScaleDownRequest(want) &&
		*set.Spec.Replicas == *want.Spec.Replicas && statefulSetRevision(set) == statefulSetRevision(want) &&
		set.Spec.UpdateStrategy.RollingUpdate != nil && set.Spec.UpdateStrategy.RollingUpdate.Partition != nil &&
		*set.Spec.UpdateStrategy.RollingUpdate.Partition == *want.Spec.UpdateStrategy.RollingUpdate.Partition
}

// withStatefulSetStatus gives the views of a StatefulSet DC's revisions the StatefulSet's
// pod counts, for computeStatus: its revisions run no pod of their own. The latest
// revision counts the pods of its template (updatedReplicas) when the StatefulSet holds
// it, and the ready and available pods of the whole set; one other revision counts the
// rest of the pods, so that the sums are the StatefulSet's.
func (c *Controller) withStatefulSetStatus(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
	if c.stsLister == nil || latest == nil {
		return revs, latest
	}
	set, err := c.stsLister.StatefulSets(dc.Namespace).Get(dc.Name)
	if err != nil {
		return revs, latest
	}
	n, _ := revision.Number(latest)
	updated := int32(0)
	if statefulSetRevision(set) == n {
		updated = set.Status.UpdatedReplicas
	}
	out := make([]*appsv1.ReplicaSet, len(revs))
	var newLatest *appsv1.ReplicaSet
	restGiven := false
	for i, rs := range revs {
		view := rs.DeepCopy()
		view.Status = appsv1.ReplicaSetStatus{}
		switch {
		case rs == latest:
			view.Status = appsv1.ReplicaSetStatus{Replicas: updated, ReadyReplicas: set.Status.ReadyReplicas, AvailableReplicas: set.Status.AvailableReplicas}
			newLatest = view
		case !restGiven:
			view.Status.Replicas = max(0, set.Status.Replicas-updated)
			restGiven = true
		}
		out[i] = view
	}
	return out, newLatest
}
