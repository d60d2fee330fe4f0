package adopt

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Adopt carries out the adoption of the Deployment name (docs/adopt.md): it creates the
// planned DeploymentConfig (nil on a rerun that finds it), orphans the Deployment and its
// ReplicaSets, relabels the running pods for revision 1, hands them to the controller and
// waits until revision 1 owns them. Every step is skipped when it is already done.
func (a *Adopter) Adopt(ctx context.Context, name string, planned *v1alpha1.DeploymentConfig) (*v1alpha1.DeploymentConfig, error) {
	dc, err := a.createPlanned(ctx, name, planned, "the Deployment")
	if err != nil {
		return nil, err
	}
	if dc.Annotations[v1alpha1.AdoptAnnotation] == v1alpha1.AdoptPending {
		if err := a.handOver(ctx, dc); err != nil {
			return nil, err
		}
	}
	if err := a.waitAdopted(ctx, dc); err != nil {
		return nil, err
	}
	if a.RetargetHPA {
		if err := a.retargetHPAs(ctx, deploymentKind, configKind, name); err != nil {
			return nil, err
		}
	}
	return dc, a.finish(ctx, name)
}

// createPlanned creates the planned DC, or reads the DC of an adoption in progress (planned
// nil on a rerun); from names what is adopted, for the progress line.
func (a *Adopter) createPlanned(ctx context.Context, name string, planned *v1alpha1.DeploymentConfig, from string) (*v1alpha1.DeploymentConfig, error) {
	dcs := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace)
	dc, err := dcs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && planned != nil:
		if dc, err = dcs.Create(ctx, planned, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		a.Progress("created deploymentconfig/%s; revision 1 waits for %s's pods", name, from)
	case err != nil:
		return nil, err
	case dc.Annotations[v1alpha1.AdoptAnnotation] == "":
		return nil, refusedf("deploymentconfig/%s exists and is not an adoption in progress", name)
	}
	return dc, nil
}

// markReady marks the DC of an adoption Ready: the pods are handed over, and the
// controller records revision 1.
func (a *Adopter) markReady(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Annotations[v1alpha1.AdoptAnnotation] = v1alpha1.AdoptReady
		_, err = a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
}

// adoptAnnotations are the hand-over's own: finish removes them.
var adoptAnnotations = []string{v1alpha1.AdoptAnnotation, v1alpha1.AdoptReplicaSetAnnotation, v1alpha1.AdoptSelectorAnnotation,
	v1alpha1.AdoptTemplateAnnotation, v1alpha1.AdoptPausedAnnotation}

// finish gives the DC, now that revision 1 owns the pods, the Deployment's template that
// they did not run (revision 2) and its paused, and removes the hand-over's annotations:
// the DC is then like any other.
func (a *Adopter) finish(ctx context.Context, name string) error {
	dcs := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := dcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading deploymentconfig/%s to finish the adoption: %w", name, err)
		}
		if pending := live.Annotations[v1alpha1.AdoptTemplateAnnotation]; pending != "" {
			if err := json.Unmarshal([]byte(pending), &live.Spec.Template); err != nil {
				return fmt.Errorf("reading annotation %s of deploymentconfig/%s: %w", v1alpha1.AdoptTemplateAnnotation, name, err)
			}
		}
		paused := live.Annotations[v1alpha1.AdoptPausedAnnotation] == "true"
		live.Spec.Paused = live.Spec.Paused || paused
		for _, k := range adoptAnnotations {
			delete(live.Annotations, k)
		}
		if _, err := dcs.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("finishing the adoption of deploymentconfig/%s: %w", name, err)
		}
		if paused {
			a.Progress("paused deploymentconfig/%s, as the Deployment was", name)
		}
		return nil
	})
}

// handOver orphans the Deployment and its ReplicaSets, relabels the pods and marks the
// DeploymentConfig Ready.
func (a *Adopter) handOver(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	dc, err := a.orphanDeployment(ctx, dc)
	if err != nil {
		return err
	}
	orphan := metav1.DeletePropagationOrphan
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	if err := a.waitFor(ctx, "deployment/"+dc.Name+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := deployments.Get(ctx, dc.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	}); err != nil {
		return err
	}
	rsName := dc.Annotations[v1alpha1.AdoptReplicaSetAnnotation]
	if err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Delete(ctx, rsName, metav1.DeleteOptions{PropagationPolicy: &orphan}); err == nil {
		a.Progress("deleted replicaset/%s, leaving its pods running", rsName)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if err := a.deleteHistory(ctx, dc); err != nil {
		return err
	}
	if err := a.relabel(ctx, dc); err != nil {
		return err
	}
	return a.markReady(ctx, dc.Name)
}

// deleteHistory deletes the Deployment's older ReplicaSets, which run no pod (labelled
// pod-template-hash, selected by the DC's selector, not a revision), unless KeepHistory.
func (a *Adopter) deleteHistory(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	if a.KeepHistory {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(dc.Spec.Selector)
	if err != nil {
		return err
	}
	rss := a.Kube.AppsV1().ReplicaSets(a.Namespace)
	list, err := rss.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	orphan := metav1.DeletePropagationOrphan
	for _, rs := range list.Items {
		if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == "" || rs.Labels[v1alpha1.ConfigLabel] != "" || rs.Status.Replicas > 0 {
			continue
		}
		if err := rss.Delete(ctx, rs.Name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		a.Progress("deleted replicaset/%s, an older revision of the Deployment at 0 pods (--keep-history keeps them)", rs.Name)
	}
	return nil
}

// relabel gives the pods of the Deployment's ReplicaSet (its selector, whatever its name)
// the labels of revision 1, and waits until none has a controller any more.
func (a *Adopter) relabel(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	sel, err := podsOf(dc)
	if err != nil {
		return err
	}
	pods := a.Kube.CoreV1().Pods(a.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		v1alpha1.ConfigLabel: dc.Name, v1alpha1.RevisionLabel: "1"}}})
	for _, p := range list.Items {
		if p.Labels[v1alpha1.RevisionLabel] == "1" && p.Labels[v1alpha1.ConfigLabel] == dc.Name {
			continue
		}
		if _, err := pods.Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	a.Progress("labelled %d pods as revision 1 of deploymentconfig/%s", len(list.Items), dc.Name)
	return a.waitFor(ctx, "the pods to lose their ReplicaSet owner", func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil && ref.Name != v1alpha1.RevisionName(dc.Name, 1) {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitAdopted waits until revision 1 is Complete and its ReplicaSet counts every pod as
// its own, ready.
func (a *Adopter) waitAdopted(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	name := v1alpha1.RevisionName(dc.Name, 1)
	return a.waitFor(ctx, "revision "+name+" to own the pods", func(ctx context.Context) (bool, error) {
		rs, err := a.Kube.AppsV1().ReplicaSets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		want := ptr.Deref(rs.Spec.Replicas, 1)
		return revision.Phase(rs) == v1alpha1.RevisionPhaseComplete && rs.Status.ObservedGeneration >= rs.Generation &&
			rs.Status.Replicas == want && rs.Status.ReadyReplicas == want, nil
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
