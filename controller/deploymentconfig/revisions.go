package deploymentconfig

import (
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// templateChanged reports whether the DC's template (defaults applied) differs
// semantically from the template of the latest revision's snapshot. A snapshot that cannot
// be read counts as a change: one new revision repairs it.
func templateChanged(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) bool {
	spec, err := revision.Snapshot(latest)
	if err != nil {
		return true
	}
	return !apiequality.Semantic.DeepEqual(dc.Spec.Template, spec.Template)
}

// hasConfigChangeTrigger reports whether the DC (defaults applied) rolls out on a config change.
func hasConfigChangeTrigger(dc *v1alpha1.DeploymentConfig) bool {
	for _, t := range dc.Spec.Triggers {
		if t.Type == v1alpha1.DeploymentTriggerOnConfigChange {
			return true
		}
	}
	return false
}

// newRevision builds revision n of dc (defaults applied) with the annotations of its cause.
func newRevision(dc *v1alpha1.DeploymentConfig, n int64, cause revisionCause) (*appsv1.ReplicaSet, error) {
	rs, err := revision.New(dc, n)
	if err != nil {
		return nil, err
	}
	cause.annotate(rs.Annotations)
	if n == 1 && dc.Annotations[v1alpha1.AdoptAnnotation] == v1alpha1.AdoptReady {
		// Adopted (docs/adopt.md): the running pods, relabelled for revision 1, are the
		// rollout; its ReplicaSet adopts them with their count and runs no deployer.
		from, kind := "deployment/", "Deployment"
		if dc.Spec.StatefulSet != nil {
			// A StatefulSet's pods run its template as it is: the revision records exactly
			// that, without the config label, so that its hash is the pods' (docs/statefulsets.md).
			from, kind = "statefulset/", "StatefulSet"
			rs.Spec.Template = *dc.Spec.Template.DeepCopy()
		}
		rs.Spec.Replicas = dc.Spec.Replicas
		rs.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseComplete)
		rs.Annotations[v1alpha1.AdoptedFromAnnotation] = from + dc.Name
		rs.Annotations[v1alpha1.StatusReasonAnnotation] = revision.FormatStatusReason(v1alpha1.ReasonCompleted,
			"adopted from "+kind+" "+dc.Name+": its running pods are revision 1")
	}
	return rs, nil
}

// rsReplicas is a ReplicaSet's spec.replicas (nil means 1, as for the apiserver).
func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
