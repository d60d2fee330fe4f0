package adopt

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// EjectingAnnotation on a Deployment made by kubectl stagehand eject names the
// DeploymentConfig it takes over (dc/NAME) until the hand-over is done.
const EjectingAnnotation = v1alpha1.GroupName + "/ejecting"

// Lost lists what the DeploymentConfig has that a Deployment cannot carry: hooks, steps,
// the failure hook, image triggers, a Custom strategy or customParams, onFailure Freeze.
func Lost(dc *v1alpha1.DeploymentConfig) []string {
	var lost []string
	s := dc.Spec.Strategy
	if s.Type == v1alpha1.DeploymentStrategyTypeCustom || s.CustomParams != nil {
		lost = append(lost, "the Custom strategy or customParams")
	}
	if p := s.RecreateParams; p != nil {
		for stage, h := range map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "mid": p.Mid, "post": p.Post, "failed": p.Failed} {
			if h != nil {
				lost = append(lost, "the "+stage+" hook")
			}
		}
	}
	if p := s.RollingParams; p != nil {
		for stage, h := range map[string]*v1alpha1.LifecycleHook{"pre": p.Pre, "post": p.Post, "failed": p.Failed} {
			if h != nil {
				lost = append(lost, "the "+stage+" hook")
			}
		}
		if len(p.Steps) > 0 {
			lost = append(lost, fmt.Sprintf("%d rollingParams.steps", len(p.Steps)))
		}
	}
	if len(dc.ImageTriggers()) > 0 {
		lost = append(lost, "the ImageChange triggers")
	}
	if s.OnFailure == v1alpha1.OnFailureFreeze {
		lost = append(lost, "onFailure: Freeze (a Deployment neither rolls back nor freezes)")
	}
	sort.Strings(lost)
	return lost
}

// DeploymentFrom is the Deployment that takes over the active revision's pods: its
// template and selector are the revision's own (the stagehand.dev labels included, so the
// Deployment controller finds that ReplicaSet's template equal to its own and adopts it,
// creating no pod), paused until the hand-over is done.
func DeploymentFrom(dc *v1alpha1.DeploymentConfig, active *appsv1.ReplicaSet) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: dc.Name, Namespace: dc.Namespace, Labels: copyMap(dc.Labels),
			Annotations: map[string]string{EjectingAnnotation: "dc/" + dc.Name}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             dc.Spec.Replicas,
			Selector:             active.Spec.Selector.DeepCopy(),
			Template:             *active.Spec.Template.DeepCopy(),
			MinReadySeconds:      dc.Spec.MinReadySeconds,
			RevisionHistoryLimit: dc.Spec.RevisionHistoryLimit,
			Paused:               true,
		},
	}
	switch s := dc.Spec.Strategy; s.Type {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		if p := s.RecreateParams; p != nil && p.TimeoutSeconds != nil {
			d.Spec.ProgressDeadlineSeconds = new(int32(min(*p.TimeoutSeconds, 1<<31-1)))
		}
	default:
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		if p := s.RollingParams; p != nil {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: p.MaxSurge, MaxUnavailable: p.MaxUnavailable}
			if p.TimeoutSeconds != nil {
				d.Spec.ProgressDeadlineSeconds = new(int32(min(*p.TimeoutSeconds, 1<<31-1)))
			}
		}
	}
	return d
}

// Eject hands the DeploymentConfig name's active revision to a Deployment of the same
// name (docs/adopt.md): a paused Deployment is created first (a rerun finds it), the DC
// is deleted with its revisions orphaned, the older revisions go, and once the
// Deployment owns the active revision it is unpaused.
func (a *Adopter) Eject(ctx context.Context, name string) error {
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	d, err := deployments.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if d, err = a.createDeployment(ctx, name); err != nil {
			return err
		}
	case err != nil:
		return err
	case d.Annotations[EjectingAnnotation] == "":
		return refusedf("a Deployment named %s exists and is not an eject in progress; rename or delete it first", name)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err == nil {
		a.Progress("deleted deploymentconfig/%s, leaving its revisions and pods running", name)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if err := a.deleteOlderRevisions(ctx, name, d); err != nil {
		return err
	}
	if err := a.labelActive(ctx, d); err != nil {
		return err
	}
	if err := a.waitFor(ctx, "deployment/"+name+" to own its ReplicaSet", func(ctx context.Context) (bool, error) {
		return a.ownsActive(ctx, d)
	}); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Spec.Paused = false
		delete(live.Annotations, EjectingAnnotation)
		_, err = deployments.Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
}

// createDeployment creates the paused Deployment from the DC's active revision.
func (a *Adopter) createDeployment(ctx context.Context, name string) (*appsv1.Deployment, error) {
	dc, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, refusedf("deploymentconfig/%s not found in namespace %s", name, a.Namespace)
	}
	if err != nil {
		return nil, err
	}
	revs, err := a.revisions(ctx, name)
	if err != nil {
		return nil, err
	}
	latest := revision.Find(revs, dc.Status.LatestVersion)
	if latest == nil || revision.Phase(latest) != v1alpha1.RevisionPhaseComplete {
		return nil, refusedf("deploymentconfig/%s has no Complete latest revision (a rollout is in flight, or it failed): eject once it is Complete", name)
	}
	d, err := a.Kube.AppsV1().Deployments(a.Namespace).Create(ctx, DeploymentFrom(dc, latest), metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	a.Progress("created deployment/%s, paused, from revision %s", name, latest.Name)
	return d, nil
}

// revisions are the DC's ReplicaSets, oldest first.
func (a *Adopter) revisions(ctx context.Context, name string) ([]*appsv1.ReplicaSet, error) {
	list, err := a.Kube.AppsV1().ReplicaSets(a.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: name}).String()})
	if err != nil {
		return nil, err
	}
	revs := make([]*appsv1.ReplicaSet, 0, len(list.Items))
	for i := range list.Items {
		revs = append(revs, &list.Items[i])
	}
	sort.Slice(revs, func(i, j int) bool {
		a, _ := revision.Number(revs[i])
		b, _ := revision.Number(revs[j])
		return a < b
	})
	return revs, nil
}

// deleteOlderRevisions deletes the revisions other than the one d's template came from.
func (a *Adopter) deleteOlderRevisions(ctx context.Context, name string, d *appsv1.Deployment) error {
	revs, err := a.revisions(ctx, name)
	if err != nil {
		return err
	}
	keep := d.Spec.Template.Labels[v1alpha1.RevisionLabel]
	for _, rs := range revs {
		if rs.Labels[v1alpha1.RevisionLabel] == keep || ptr.Deref(rs.Spec.Replicas, 1) > 0 {
			continue
		}
		if err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		a.Progress("deleted replicaset/%s, an older revision", rs.Name)
	}
	return nil
}

// labelActive gives the active revision's ReplicaSet the labels of the Deployment's
// selector: the Deployment controller adopts a ReplicaSet by its own labels, and a
// revision's carry only stagehand.dev/config and stagehand.dev/revision.
func (a *Adopter) labelActive(ctx context.Context, d *appsv1.Deployment) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": d.Spec.Selector.MatchLabels}})
	if err != nil {
		return err
	}
	_, err = a.Kube.AppsV1().ReplicaSets(a.Namespace).Patch(ctx, activeName(d), types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// activeName is the name of the revision d's template came from.
func activeName(d *appsv1.Deployment) string {
	return d.Name + "-" + d.Spec.Template.Labels[v1alpha1.RevisionLabel]
}

// ownsActive reports whether the Deployment controls the ReplicaSet of the revision its
// template came from.
func (a *Adopter) ownsActive(ctx context.Context, d *appsv1.Deployment) (bool, error) {
	rs, err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Get(ctx, activeName(d), metav1.GetOptions{})
	if err != nil {
		return false, ignoreNotFound(err)
	}
	ref := metav1.GetControllerOfNoCopy(rs)
	return ref != nil && ref.Kind == "Deployment" && ref.UID == d.UID, nil
}
