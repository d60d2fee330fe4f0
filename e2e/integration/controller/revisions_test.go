//go:build e2e

package controllerintegration

import (
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// templateChanged reports whether the template of dc (defaults applied) differs from the
// one in the snapshot of revision latest, as the controller decides it; an unreadable
// snapshot counts as a change.
func templateChanged(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) bool {
	spec, err := revision.Snapshot(latest)
	if err != nil {
		return true
	}
	return !apiequality.Semantic.DeepEqual(dc.Spec.Template, spec.Template)
}

func defaulted(dc *v1alpha1.DeploymentConfig) *v1alpha1.DeploymentConfig {
	dc = dc.DeepCopy()
	v1alpha1.SetDefaults(dc)
	return dc
}
