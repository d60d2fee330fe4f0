package revision

import (
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// New builds revision n of dc (defaults applied) as DESIGN.md §4 describes it:
// 0 replicas, the config and revision labels on the RS, its selector and its pod template,
// the DC as controller owner, and the annotations with phase New. The creator adds the
// cause annotations. For a DC with spec.statefulSet it is the view of the revision's
// ControllerRevision (record.go): the workload label, and neither the template nor the
// selector carries the revision label.
func New(dc *v1alpha1.DeploymentConfig, n int64) (*appsv1.ReplicaSet, error) {
	snapshot, err := json.Marshal(dc.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the config snapshot of %s: %w", dc.Name, err)
	}
	name := v1alpha1.RevisionName(dc.Name, n)
	revLabels := map[string]string{
		v1alpha1.ConfigLabel:   dc.Name,
		v1alpha1.RevisionLabel: strconv.FormatInt(n, 10),
	}

	selector := &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.ConfigLabel: dc.Name}}
	if dc.Spec.Selector != nil {
		selector = dc.Spec.Selector.DeepCopy()
		if selector.MatchLabels == nil {
			selector.MatchLabels = map[string]string{}
		}
	}
	stateful := dc.Spec.StatefulSet != nil
	if !stateful {
		selector.MatchLabels[v1alpha1.RevisionLabel] = revLabels[v1alpha1.RevisionLabel]
	}
	// Deployer and hook pods carry the config and revision labels too. Whatever selector the
	// user chose, the revision's ReplicaSet must never adopt or count them.
	selector.MatchExpressions = append(selector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: v1alpha1.HookStageLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
		metav1.LabelSelectorRequirement{Key: v1alpha1.DeployerPodForLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	)

	template := dc.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	for k, v := range revLabels {
		template.Labels[k] = v
	}
	if stateful {
		// Pods keep their template across revisions: a rollback gives the old pods the
		// very template they run, so the revision is not a label of theirs (record.go).
		delete(template.Labels, v1alpha1.RevisionLabel)
		selector = withHash(selector, "")
		revLabels[v1alpha1.WorkloadLabel] = v1alpha1.WorkloadStatefulSet
	}

	replicas := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: dc.Namespace,
			Labels:    revLabels,
			Annotations: map[string]string{
				v1alpha1.PhaseAnnotation:           string(v1alpha1.RevisionPhaseNew),
				v1alpha1.ConfigSnapshotAnnotation:  string(snapshot),
				v1alpha1.DesiredReplicasAnnotation: FormatDesiredReplicas(ConfigReplicas(dc)),
				v1alpha1.DeployerPodAnnotation:     v1alpha1.DeployerPodName(name),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dc, ConfigKind)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: dc.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        *template,
		},
	}
	return rs, nil
}

// ConfigReplicas is spec.replicas of a DeploymentConfig, with its default.
func ConfigReplicas(dc *v1alpha1.DeploymentConfig) int32 {
	if dc.Spec.Replicas == nil {
		return v1alpha1.DefaultReplicas
	}
	return *dc.Spec.Replicas
}
