package adopt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// EjectingAnnotation on a Deployment made by kubectl stagehand eject names the revision
// (its ReplicaSet) whose pods it takes over, until the hand-over is done.
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

// DeploymentFrom is the Deployment that takes over the active revision's pods, paused until
// the hand-over is done: the revision's template without the stagehand.dev labels (what
// the pods run, and what a later adopt reads like any Deployment's), the DC's selector
// (ejectSelector), replicas, minReadySeconds, revisionHistoryLimit, Rolling as
// RollingUpdate with the same maxSurge and maxUnavailable, Recreate as Recreate, and
// timeoutSeconds as progressDeadlineSeconds.
func DeploymentFrom(dc *v1alpha1.DeploymentConfig, active *appsv1.ReplicaSet) (*appsv1.Deployment, error) {
	template := active.Spec.Template.DeepCopy()
	for _, k := range stagehandLabels {
		delete(template.Labels, k)
	}
	selector, err := ejectSelector(dc, template)
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: dc.Name, Namespace: dc.Namespace, Labels: copyMap(dc.Labels),
			Annotations: map[string]string{EjectingAnnotation: active.Name}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             dc.Spec.Replicas,
			Selector:             selector,
			Template:             *template,
			MinReadySeconds:      dc.Spec.MinReadySeconds,
			RevisionHistoryLimit: dc.Spec.RevisionHistoryLimit,
			Paused:               true,
		},
	}
	switch s := dc.Spec.Strategy; s.Type {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		if p := s.RecreateParams; p != nil && p.TimeoutSeconds != nil {
			d.Spec.ProgressDeadlineSeconds = new(int32(min(*p.TimeoutSeconds, maxSeconds)))
		}
	default:
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		if p := s.RollingParams; p != nil {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: p.MaxSurge, MaxUnavailable: p.MaxUnavailable}
			if p.TimeoutSeconds != nil {
				d.Spec.ProgressDeadlineSeconds = new(int32(min(*p.TimeoutSeconds, maxSeconds)))
			}
		}
	}
	return d, nil
}

// stagehandLabels are the labels a revision gives its template and pods; eject takes them
// off, so that the Deployment and its pods are like any other.
var stagehandLabels = []string{v1alpha1.ConfigLabel, v1alpha1.RevisionLabel}

// ejectSelector is the Deployment's selector: the DC's own (matchExpressions included),
// or, where the DC has none, the template's labels. One that names a stagehand.dev label,
// or selects everything, is refused: the Deployment's pods do not carry those labels.
func ejectSelector(dc *v1alpha1.DeploymentConfig, template *corev1.PodTemplateSpec) (*metav1.LabelSelector, error) {
	sel := dc.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{MatchLabels: copyMap(template.Labels)}
	}
	keys := slices.Collect(maps.Keys(sel.MatchLabels))
	for _, r := range sel.MatchExpressions {
		keys = append(keys, r.Key)
	}
	for _, k := range keys {
		if slices.Contains(stagehandLabels, k) {
			return nil, refusedf("deploymentconfig/%s's spec.selector names label %s, which the Deployment's pods will not carry: "+
				"select by the template's own labels (kubectl stagehand convert shows the DC), then eject", dc.Name, k)
		}
	}
	if len(keys) == 0 {
		return nil, refusedf("deploymentconfig/%s has no spec.selector and its template no labels: a Deployment needs a selector; give the DC one, then eject", dc.Name)
	}
	return sel, nil
}

// Eject hands the DeploymentConfig name's active revision to a Deployment of the same
// name (docs/adopt.md). Everything is checked before the first write; a paused Deployment
// is created (a rerun finds it, and re-checks the DC first), the DC is deleted with its
// revisions orphaned, the older revisions go, the active revision's pods are orphaned and
// relabelled for a ReplicaSet of the Deployment's own kind, which the Deployment
// controller adopts, and the Deployment is unpaused.
//
// The DC of a StatefulSet gives that StatefulSet back instead (ejectStatefulSet).
func (a *Adopter) Eject(ctx context.Context, name string) error {
	if handled, err := a.ejectStatefulSet(ctx, name); handled {
		return err
	}
	d, err := a.prepareEject(ctx, name)
	if err != nil {
		return err
	}
	active := d.Annotations[EjectingAnnotation]
	if err := a.waitFor(ctx, "deploymentconfig/"+name+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	}); err != nil {
		return err
	}
	if err := a.deleteOlderRevisions(ctx, name, active); err != nil {
		return err
	}
	hash := podTemplateHash(&d.Spec.Template)
	if err := a.orphanRevision(ctx, d, active, hash); err != nil {
		return err
	}
	if err := a.replicaSetFor(ctx, d, hash); err != nil {
		return err
	}
	if a.RetargetHPA {
		if err := a.retargetHPAs(ctx, configKind, deploymentKind, name); err != nil {
			return err
		}
	}
	deployments := a.Kube.AppsV1().Deployments(a.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading deployment/%s to unpause it: %w", name, err)
		}
		live.Spec.Paused = false
		delete(live.Annotations, EjectingAnnotation)
		if _, err = deployments.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("unpausing deployment/%s: %w", name, err)
		}
		return nil
	})
}
