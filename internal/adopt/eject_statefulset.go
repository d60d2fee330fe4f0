package adopt

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// ejectSetAccess is what giving a StatefulSet back needs, checked before the first write.
var ejectSetAccess = []authorizationv1.ResourceAttributes{
	{Group: "apps", Resource: "statefulsets", Verb: "update"},
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "delete"},
}

// ejectStatefulSet gives the StatefulSet of DC name back (docs/statefulsets.md, "Adopt and
// eject"); handled is false when name is not a StatefulSet DC, nor the StatefulSet of an
// interrupted eject. Everything is checked before the first write. The StatefulSet is
// released first (no owner, no config label, EjectingAnnotation naming the revision it
// runs), then the DC is deleted with its revision records; the StatefulSet, its pods and
// its claims stay as they are. A rerun goes on from where it stopped.
func (a *Adopter) ejectStatefulSet(ctx context.Context, name string) (handled bool, err error) {
	dcs := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace)
	dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		dc = nil
	case err != nil:
		return true, fmt.Errorf("reading deploymentconfig/%s: %w", name, err)
	case dc.Spec.StatefulSet == nil:
		return false, nil
	}
	set, err := a.Kube.AppsV1().StatefulSets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case dc == nil && (err != nil || set.Annotations[EjectingAnnotation] == ""):
		return false, nil // no DC, and no eject of ours in progress
	case apierrors.IsNotFound(err):
		return true, refusedf("deploymentconfig/%s has no StatefulSet %s to give back", name, name)
	case err != nil:
		return true, fmt.Errorf("reading statefulset %s: %w", name, err)
	}
	if dc != nil {
		if set.Annotations[EjectingAnnotation] == "" {
			if err := a.checkSetEject(ctx, dc, set); err != nil {
				return true, err
			}
			if err := a.releaseSet(ctx, dc); err != nil {
				return true, err
			}
		}
		background, uid := metav1.DeletePropagationBackground, dc.UID
		err := dcs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return true, fmt.Errorf("deleting deploymentconfig/%s: %w", name, err)
		}
		a.Progress("deleted deploymentconfig/%s and its revision records; statefulset/%s, its pods and claims stay", name, name)
		if err := a.waitFor(ctx, "deploymentconfig/"+name+" to be gone", func(ctx context.Context) (bool, error) {
			_, err := dcs.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		}); err != nil {
			return true, err
		}
	}
	if a.RetargetHPA {
		if err := a.retargetHPAs(ctx, configKind, statefulSetKind, name); err != nil {
			return true, err
		}
	}
	return true, a.updateSet(ctx, name, func(set *appsv1.StatefulSet) { delete(set.Annotations, EjectingAnnotation) })
}

// checkSetEject refuses, writing nothing, a DC whose latest revision is not Complete or
// not what its StatefulSet runs, a scale-down in progress, an HPA (unless RetargetHPA) and
// a user who lacks a permission a step needs.
func (a *Adopter) checkSetEject(ctx context.Context, dc *v1alpha1.DeploymentConfig, set *appsv1.StatefulSet) error {
	if !metav1.IsControlledBy(set, dc) {
		return refusedf("statefulset %s is not controlled by deploymentconfig/%s: there is nothing to give back", set.Name, dc.Name)
	}
	latest, err := revisions.Client{Kube: a.Kube}.Get(ctx, a.Namespace, v1alpha1.RevisionName(dc.Name, dc.Status.LatestVersion), true)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || revision.Phase(latest) != v1alpha1.RevisionPhaseComplete ||
		set.Annotations[v1alpha1.StatefulSetRevisionAnnotation] != strconv.FormatInt(dc.Status.LatestVersion, 10) {
		return refusedf("deploymentconfig/%s has no Complete latest revision that its StatefulSet runs (a rollout is in flight, or it failed): eject once it is Complete", dc.Name)
	}
	if v1alpha1.InDeferScaleDown(set) {
		return refusedf("statefulset %s is in the middle of a BeforeScaleDown scale-down: eject once it has ended", set.Name)
	}
	if err := a.refuseHPA(ctx, configKind, dc.Name, "eject", statefulSetKind); err != nil {
		return err
	}
	return a.checkAccess(ctx, "eject", ejectSetAccess)
}

// releaseSet takes the DC's ownership, config label and revision annotation off its
// StatefulSet, and names the revision it runs in EjectingAnnotation, in one write. The
// pod template is not touched: its pods keep running as they are.
func (a *Adopter) releaseSet(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	err := a.updateSet(ctx, dc.Name, func(set *appsv1.StatefulSet) {
		var refs []metav1.OwnerReference
		for _, ref := range set.OwnerReferences {
			if ref.UID != dc.UID {
				refs = append(refs, ref)
			}
		}
		set.OwnerReferences = refs
		delete(set.Labels, v1alpha1.ConfigLabel)
		delete(set.Annotations, v1alpha1.StatefulSetRevisionAnnotation)
		if set.Annotations == nil {
			set.Annotations = map[string]string{}
		}
		set.Annotations[EjectingAnnotation] = v1alpha1.RevisionName(dc.Name, dc.Status.LatestVersion)
	})
	if err == nil {
		a.Progress("statefulset/%s no longer belongs to deploymentconfig/%s; no pod was touched", dc.Name, dc.Name)
	}
	return err
}

// updateSet applies change to the live StatefulSet name and writes it, again on a conflict.
func (a *Adopter) updateSet(ctx context.Context, name string, change func(*appsv1.StatefulSet)) error {
	sets := a.Kube.AppsV1().StatefulSets(a.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := sets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading statefulset %s: %w", name, err)
		}
		change(set)
		if _, err := sets.Update(ctx, set, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating statefulset %s: %w", name, err)
		}
		return nil
	})
}
