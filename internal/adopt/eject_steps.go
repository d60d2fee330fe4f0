package adopt

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ejectAccess is what eject's steps need, checked before the first write.
var ejectAccess = []authorizationv1.ResourceAttributes{
	{Group: "apps", Resource: "deployments", Verb: "create"},
	{Group: "apps", Resource: "deployments", Verb: "update"},
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "delete"},
	{Group: "apps", Resource: "replicasets", Verb: "create"},
	{Group: "apps", Resource: "replicasets", Verb: "delete"},
	{Resource: "pods", Verb: "patch"},
}

// prepareEject checks everything, then creates the paused Deployment (or, on a rerun,
// brings it up to the DC's latest revision, which may have rolled on) and deletes the DC
// with its revisions orphaned, only as it was checked (a resourceVersion precondition; a
// change in between is checked again). A rerun that finds the DC gone goes on from there.
func (a *Adopter) prepareEject(ctx context.Context, name string) (*appsv1.Deployment, error) {
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	dcs := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace)
	var d *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := deployments.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			existing = nil
		case err != nil:
			return fmt.Errorf("reading deployment %s: %w", name, err)
		case existing.Annotations[EjectingAnnotation] == "":
			return refusedf("a Deployment named %s exists and is not an eject in progress; rename or delete it first", name)
		}
		dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && existing != nil:
			d = existing // a rerun after the DC was deleted
			return nil
		case apierrors.IsNotFound(err):
			return refusedf("deploymentconfig/%s not found in namespace %s", name, a.Namespace)
		case err != nil:
			return fmt.Errorf("reading deploymentconfig/%s: %w", name, err)
		}
		want, err := a.checkEject(ctx, dc)
		if err != nil {
			return err
		}
		if d, err = a.putDeployment(ctx, existing, want); err != nil {
			return err
		}
		orphan, rv := metav1.DeletePropagationOrphan, dc.ResourceVersion
		err = dcs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &orphan, Preconditions: &metav1.Preconditions{UID: &dc.UID, ResourceVersion: &rv}})
		if err == nil {
			a.Progress("deleted deploymentconfig/%s, leaving its revisions and pods running", name)
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	return d, err
}

// checkEject refuses, writing nothing, a DC whose latest revision is not Complete, one an
// HPA scales (unless RetargetHPA), and a user who lacks a permission a step needs; it
// returns the Deployment to create.
func (a *Adopter) checkEject(ctx context.Context, dc *v1alpha1.DeploymentConfig) (*appsv1.Deployment, error) {
	revs, err := a.revisions(ctx, dc.Name)
	if err != nil {
		return nil, err
	}
	latest := revision.Find(revs, dc.Status.LatestVersion)
	if latest == nil || revision.Phase(latest) != v1alpha1.RevisionPhaseComplete {
		return nil, refusedf("deploymentconfig/%s has no Complete latest revision (a rollout is in flight, or it failed): eject once it is Complete", dc.Name)
	}
	want, err := DeploymentFrom(dc, latest)
	if err != nil {
		return nil, err
	}
	if err := a.refuseHPA(ctx, configKind, dc.Name, "eject", deploymentKind); err != nil {
		return nil, err
	}
	return want, a.checkAccess(ctx, "eject", ejectAccess)
}

// putDeployment creates want, or brings the paused Deployment of an interrupted eject up
// to it when the DC rolled on since.
func (a *Adopter) putDeployment(ctx context.Context, existing, want *appsv1.Deployment) (*appsv1.Deployment, error) {
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	if existing == nil {
		d, err := deployments.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating deployment %s: %w", want.Name, err)
		}
		a.Progress("created deployment/%s, paused, from revision %s", want.Name, want.Annotations[EjectingAnnotation])
		return d, nil
	}
	if existing.Annotations[EjectingAnnotation] == want.Annotations[EjectingAnnotation] {
		return existing, nil
	}
	if !labels.Equals(existing.Spec.Selector.MatchLabels, want.Spec.Selector.MatchLabels) {
		return nil, refusedf("deploymentconfig/%s's selector changed since deployment/%s was made by an interrupted eject; delete that Deployment (it runs no pod yet) and eject again", want.Name, want.Name)
	}
	updated := existing.DeepCopy()
	updated.Spec = want.Spec
	updated.Annotations[EjectingAnnotation] = want.Annotations[EjectingAnnotation]
	d, err := deployments.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating deployment %s to revision %s: %w", want.Name, want.Annotations[EjectingAnnotation], err)
	}
	a.Progress("deploymentconfig/%s rolled on since the eject began: deployment/%s now takes revision %s", want.Name, want.Name, want.Annotations[EjectingAnnotation])
	return d, nil
}

// revisions are the DC's ReplicaSets, oldest first.
func (a *Adopter) revisions(ctx context.Context, name string) ([]*appsv1.ReplicaSet, error) {
	list, err := a.Kube.AppsV1().ReplicaSets(a.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: name}).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of deploymentconfig/%s: %w", name, err)
	}
	revs := revision.Pointers(list.Items)
	sort.Slice(revs, func(i, j int) bool {
		a, _ := revision.Number(revs[i])
		b, _ := revision.Number(revs[j])
		return a < b
	})
	return revs, nil
}

// deleteOlderRevisions deletes the revisions other than active that run no pod.
func (a *Adopter) deleteOlderRevisions(ctx context.Context, name, active string) error {
	revs, err := a.revisions(ctx, name)
	if err != nil {
		return err
	}
	for _, rs := range revs {
		if rs.Name == active || ptr.Deref(rs.Spec.Replicas, 1) > 0 || rs.Status.Replicas > 0 {
			continue
		}
		if err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting replicaset %s, an older revision: %w", rs.Name, err)
		}
		a.Progress("deleted replicaset/%s, an older revision", rs.Name)
	}
	return nil
}

// orphanRevision deletes the active revision's ReplicaSet with its pods orphaned, gives
// the pods the Deployment's labels (the stagehand.dev ones off, pod-template-hash on), and
// waits until none has a controller any more.
func (a *Adopter) orphanRevision(ctx context.Context, d *appsv1.Deployment, active, hash string) error {
	orphan := metav1.DeletePropagationOrphan
	if err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Delete(ctx, active, metav1.DeleteOptions{PropagationPolicy: &orphan}); err == nil {
		a.Progress("deleted replicaset/%s, leaving its pods running", active)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting replicaset %s with its pods orphaned: %w", active, err)
	}
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = copyMap(selector.MatchLabels)
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	revPods := selector.DeepCopy()
	revPods.MatchLabels[v1alpha1.ConfigLabel] = d.Name
	revPods.MatchLabels[v1alpha1.RevisionLabel] = strings.TrimPrefix(active, d.Name+"-")
	revPods.MatchExpressions = append(revPods.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
		metav1.LabelSelectorRequirement{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist})
	pods := a.Kube.CoreV1().Pods(a.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(revPods)})
	if err != nil {
		return fmt.Errorf("listing the pods of revision %s: %w", active, err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{
		v1alpha1.ConfigLabel: nil, v1alpha1.RevisionLabel: nil, appsv1.DefaultDeploymentUniqueLabelKey: hash}}})
	for _, p := range list.Items {
		if _, err := pods.Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("relabelling pod %s for deployment %s: %w", p.Name, d.Name, err)
		}
	}
	a.Progress("labelled %d pods of revision %s for deployment/%s", len(list.Items), active, d.Name)
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Errorf("reading the selector of deployment %s: %w", d.Name, err)
	}
	return a.waitFor(ctx, "the pods to lose their revision owner", func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil && ref.Name == active {
				return false, nil
			}
		}
		return true, nil
	})
}
