package revision

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// RequestPending reports whether the rollout request r still waits for the controller, given the DC
// and its latest revision (nil when it has none): a Latest or Rollback request while
// status.latestVersion still equals its latestVersion; a Retry while that revision is the
// latest, is Failed, and does not carry the request's ID. The controller and every client
// decide with this one function.
func RequestPending(r *v1alpha1.RolloutRequest, dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) bool {
	if r == nil || r.LatestVersion != dc.Status.LatestVersion {
		return false
	}
	if r.Action != v1alpha1.RolloutRequestRetry {
		return true
	}
	return latest != nil && Phase(latest) == v1alpha1.RevisionPhaseFailed && latest.Annotations[v1alpha1.RequestAnnotation] != r.ID
}
