package revision

import (
	"time"

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

// Retried reports whether the revision was ever run again by a Retry request: it carries
// the retried-at annotation.
func Retried(rs *appsv1.ReplicaSet) bool {
	_, ok := rs.Annotations[v1alpha1.RetriedAtAnnotation]
	return ok
}

// RetriedAt is when the last Retry reset the revision to New, from its retried-at
// annotation; ok is false when it was never retried or the annotation does not parse.
func RetriedAt(rs *appsv1.ReplicaSet) (at time.Time, ok bool) {
	at, err := time.Parse(time.RFC3339, rs.Annotations[v1alpha1.RetriedAtAnnotation])
	return at, err == nil
}

// FormatRetriedAt renders t for the retried-at annotation: RFC 3339, in UTC, to the second.
func FormatRetriedAt(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
