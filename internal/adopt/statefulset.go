package adopt

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// statefulSetAccess is what adopting a StatefulSet needs, checked first.
var statefulSetAccess = []authorizationv1.ResourceAttributes{
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "create"},
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "update"},
	{Group: "apps", Resource: "statefulsets", Verb: "update"},
}

// ConfigFromStatefulSet is the DeploymentConfig that adopts set (docs/statefulsets.md,
// "Adopt and eject"): the same name, namespace, labels and user annotations; template,
// selector, replicas, minReadySeconds and revisionHistoryLimit as they are; spec.statefulSet
// with its serviceName, podManagementPolicy, claim templates and retention policy; Rolling
// with its maxUnavailable; and a ConfigChange trigger. Revision 1 is the template as the
// pods run it, so that no pod restarts.
func ConfigFromStatefulSet(set *appsv1.StatefulSet) (*v1alpha1.DeploymentConfig, []string) {
	dc := &v1alpha1.DeploymentConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "DeploymentConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace, Labels: copyMap(set.Labels)},
		Spec: v1alpha1.DeploymentConfigSpec{
			Replicas:             set.Spec.Replicas,
			Selector:             set.Spec.Selector.DeepCopy(),
			Template:             *set.Spec.Template.DeepCopy(),
			MinReadySeconds:      set.Spec.MinReadySeconds,
			RevisionHistoryLimit: set.Spec.RevisionHistoryLimit,
			Triggers:             []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}},
			StatefulSet: &v1alpha1.StatefulSetWorkload{
				ServiceName:                          set.Spec.ServiceName,
				PodManagementPolicy:                  string(set.Spec.PodManagementPolicy),
				PersistentVolumeClaimRetentionPolicy: set.Spec.PersistentVolumeClaimRetentionPolicy.DeepCopy(),
			},
		},
	}
	for _, claim := range set.Spec.VolumeClaimTemplates {
		c := claim.DeepCopy()
		c.Status = corev1.PersistentVolumeClaimStatus{}
		dc.Spec.StatefulSet.VolumeClaimTemplates = append(dc.Spec.StatefulSet.VolumeClaimTemplates, *c)
	}
	warnings := carryAnnotations(dc, set.Annotations)
	params := &v1alpha1.RollingDeploymentStrategyParams{}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		params.MaxUnavailable = ru.MaxUnavailable
	}
	dc.Spec.Strategy = v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling, RollingParams: params}
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		warnings = append(warnings, fmt.Sprintf("statefulset %s has updateStrategy OnDelete: the DeploymentConfig walks its pods itself, with a RollingUpdate partition, highest ordinal first", set.Name))
	}
	return dc, warnings
}

// PlanStatefulSet reads StatefulSet name and returns the DeploymentConfig that adopts it,
// with the warnings of the mapping, or a Refused error: no such StatefulSet, one that
// something controls, a DeploymentConfig of that name, a rollout in progress, an HPA
// (unless RetargetHPA), or a missing permission.
func (a *Adopter) PlanStatefulSet(ctx context.Context, name string) (*v1alpha1.DeploymentConfig, []string, error) {
	set, err := a.Kube.AppsV1().StatefulSets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, refusedf("statefulset %s not found in namespace %s", name, a.Namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil, nil, refusedf("a DeploymentConfig named %s exists in namespace %s: adopt makes one of the StatefulSet's name; rename or delete it first", name, a.Namespace)
	} else if !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	if err := settledSet(set); err != nil {
		return nil, nil, err
	}
	if err := a.refuseHPA(ctx, statefulSetKind, name, "adopt", configKind); err != nil {
		return nil, nil, err
	}
	if err := a.checkAccess(ctx, "adopt", statefulSetAccess); err != nil {
		return nil, nil, err
	}
	dc, warnings := ConfigFromStatefulSet(set)
	if dc.Annotations == nil {
		dc.Annotations = map[string]string{}
	}
	dc.Annotations[v1alpha1.AdoptAnnotation] = v1alpha1.AdoptPending
	if _, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Create(ctx, dc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return nil, nil, refusedf("the DeploymentConfig that would adopt statefulset %s is refused by the apiserver: %v; nothing was changed", name, err)
	}
	return dc, warnings, nil
}

// settledSet refuses a StatefulSet that something else controls, or whose pods do not all
// run its template: adopting it mid-rollout would record a template that some pods do not run.
func settledSet(set *appsv1.StatefulSet) error {
	if ref := metav1.GetControllerOfNoCopy(set); ref != nil {
		return refusedf("statefulset %s is controlled by %s %s: only a StatefulSet that nothing controls can be adopted", set.Name, ref.Kind, ref.Name)
	}
	want := ptr.Deref(set.Spec.Replicas, 1)
	if set.Status.ObservedGeneration < set.Generation || set.Status.CurrentRevision != set.Status.UpdateRevision ||
		set.Status.UpdatedReplicas != want || set.Status.Replicas != want {
		return refusedf("statefulset %s is mid-rollout or scaling (%d of %d pods on its template): wait for kubectl rollout status statefulset/%s, then adopt",
			set.Name, set.Status.UpdatedReplicas, want, set.Name)
	}
	return nil
}

// AdoptStatefulSet carries out the adoption of StatefulSet name: it creates the planned
// DeploymentConfig (nil on a rerun that finds it), makes the DC the StatefulSet's
// controller, and waits until revision 1, Complete, records the template the pods run.
// No pod is touched. Every step is skipped when it is already done.
func (a *Adopter) AdoptStatefulSet(ctx context.Context, name string, planned *v1alpha1.DeploymentConfig) (*v1alpha1.DeploymentConfig, error) {
	dc, err := a.createPlanned(ctx, name, planned, "the StatefulSet")
	if err != nil {
		return nil, err
	}
	if dc.Annotations[v1alpha1.AdoptAnnotation] == v1alpha1.AdoptPending {
		if err := a.takeStatefulSet(ctx, dc); err != nil {
			return nil, err
		}
	}
	if err := a.waitFor(ctx, "revision "+v1alpha1.RevisionName(name, 1)+" to record the pods' template", func(ctx context.Context) (bool, error) {
		set, err := a.Kube.AppsV1().StatefulSets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		one, err := revisions.Client{Kube: a.Kube}.Get(ctx, a.Namespace, v1alpha1.RevisionName(name, 1), true)
		if err != nil {
			return false, ignoreNotFound(err)
		}
		return revision.Phase(one) == v1alpha1.RevisionPhaseComplete && revision.TemplateHash(one) == set.Status.CurrentRevision, nil
	}); err != nil {
		return nil, err
	}
	if a.RetargetHPA {
		if err := a.retargetHPAs(ctx, statefulSetKind, configKind, name); err != nil {
			return nil, err
		}
	}
	return dc, a.finish(ctx, name)
}

// takeStatefulSet makes the pending DC the StatefulSet's controller, with the config label
// and revision 1 named on it, in one write that carries the StatefulSet's resourceVersion:
// the template is checked against the DC's in the same read. It then marks the DC Ready,
// and the controller records revision 1.
func (a *Adopter) takeStatefulSet(ctx context.Context, dc *v1alpha1.DeploymentConfig) error {
	sets := a.Kube.AppsV1().StatefulSets(a.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := sets.Get(ctx, dc.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading statefulset %s: %w", dc.Name, err)
		}
		if metav1.IsControlledBy(set, dc) {
			return nil
		}
		if err := settledSet(set); err != nil {
			return err
		}
		if !apiequality.Semantic.DeepEqual(set.Spec.Template, dc.Spec.Template) {
			return refusedf("statefulset %s's template changed since the adoption was planned; delete deploymentconfig/%s and adopt again", dc.Name, dc.Name)
		}
		taken := set.DeepCopy()
		if taken.Labels == nil {
			taken.Labels = map[string]string{}
		}
		if taken.Annotations == nil {
			taken.Annotations = map[string]string{}
		}
		taken.Labels[v1alpha1.ConfigLabel] = dc.Name
		taken.Annotations[v1alpha1.StatefulSetRevisionAnnotation] = "1"
		taken.OwnerReferences = append(taken.OwnerReferences, *metav1.NewControllerRef(dc, revision.ConfigKind))
		if taken.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
			taken.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32)}}
		}
		if _, err := sets.Update(ctx, taken, metav1.UpdateOptions{}); err != nil {
			return err
		}
		a.Progress("statefulset/%s is now controlled by deploymentconfig/%s; no pod was touched", dc.Name, dc.Name)
		return nil
	})
	if err != nil {
		return err
	}
	return a.markReady(ctx, dc.Name)
}
