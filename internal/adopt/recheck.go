package adopt

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// orphanDeployment deletes the Deployment with propagationPolicy Orphan, but only as it
// was checked: the plan in the pending DC is made again from the live Deployment first
// (a rerun may come long after the plan, and the Deployment may have rolled on), the DC
// is updated when the plan changed, and the delete has the Deployment's resourceVersion
// as a precondition, so that a change in between is checked again. It returns the DC as
// it now is.
func (a *Adopter) orphanDeployment(ctx context.Context, dc *v1alpha1.DeploymentConfig) (*v1alpha1.DeploymentConfig, error) {
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	orphan := metav1.DeletePropagationOrphan
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments.Get(ctx, dc.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading deployment %s: %w", dc.Name, err)
		}
		current, err := a.currentReplicaSet(ctx, d)
		if err != nil {
			return err
		}
		fresh, _, err := ConfigFrom(d)
		if err != nil {
			return refusedf("%v", err)
		}
		if _, err := recordRunning(fresh, d, current); err != nil {
			return err
		}
		if dc, err = a.replan(ctx, dc, fresh); err != nil {
			return err
		}
		rv := d.ResourceVersion
		err = deployments.Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: &orphan,
			Preconditions: &metav1.Preconditions{UID: &d.UID, ResourceVersion: &rv}})
		switch {
		case err == nil:
			a.Progress("deleted deployment/%s, leaving its ReplicaSets and pods running", d.Name)
		case !apierrors.IsNotFound(err):
			return err
		}
		return nil
	})
	return dc, err
}

// replan updates the pending DC to fresh, the plan made again from the live Deployment,
// when what its pods run differs (the template, or the hand-over's annotations: the
// ReplicaSet, the template they do not run yet, paused). The DC's spec as created has the
// apiserver's defaults, so the rest is not compared; an update takes fresh's spec whole.
func (a *Adopter) replan(ctx context.Context, dc, fresh *v1alpha1.DeploymentConfig) (*v1alpha1.DeploymentConfig, error) {
	same := apiequality.Semantic.DeepEqual(dc.Spec.Template, fresh.Spec.Template)
	for _, k := range adoptAnnotations {
		same = same && dc.Annotations[k] == fresh.Annotations[k]
	}
	if same {
		return dc, nil
	}
	if dc.Annotations[v1alpha1.AdoptAnnotation] != v1alpha1.AdoptPending {
		return nil, refusedf("deployment %s changed after its pods were handed to deploymentconfig/%s; delete one of them and adopt again", dc.Name, dc.Name)
	}
	dc = dc.DeepCopy()
	dc.Spec = fresh.Spec
	for _, k := range adoptAnnotations {
		if v, ok := fresh.Annotations[k]; ok {
			dc.Annotations[k] = v
		} else {
			delete(dc.Annotations, k)
		}
	}
	updated, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Update(ctx, dc, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating deploymentconfig/%s to what deployment %s now runs: %w", dc.Name, dc.Name, err)
	}
	a.Progress("deployment/%s changed since the adoption was planned: deploymentconfig/%s now adopts replicaset %s",
		dc.Name, dc.Name, updated.Annotations[v1alpha1.AdoptReplicaSetAnnotation])
	return updated, nil
}
