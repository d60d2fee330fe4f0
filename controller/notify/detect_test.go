package notify

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

func events(occ []Occurrence) []string {
	var out []string
	for _, o := range occ {
		out = append(out, o.Revision.Name+" "+string(o.Payload.Event))
	}
	return out
}

func TestHappenedFollowsTheRevisionsState(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "web:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	rev := func(n int64, phase v1alpha1.RevisionPhase, annotations map[string]string) *appsv1.ReplicaSet {
		rs := testutil.Revision(dc, n, 2, phase)
		for k, v := range annotations {
			rs.Annotations[k] = v
		}
		return rs
	}
	paused := `{"step":2,"total":2,"name":"step-2","action":"pause","state":"Paused"}`
	failed := "TimedOut: hook pod web-3-hook-pre failed with exit code 1; its log ends with:\nmigrating\nboom"

	assert.Equal(t, []string{"web-1 Started", "web-1 Complete", "web-2 Started", "web-2 Waiting"},
		events(Happened(dc, []*appsv1.ReplicaSet{rev(1, v1alpha1.RevisionPhaseComplete, nil),
			rev(2, v1alpha1.RevisionPhaseRunning, map[string]string{v1alpha1.StepAnnotation: paused})}, nil)))

	occ := Happened(dc, []*appsv1.ReplicaSet{rev(1, v1alpha1.RevisionPhaseComplete, nil),
		rev(3, v1alpha1.RevisionPhaseFailed, map[string]string{v1alpha1.StatusReasonAnnotation: failed})}, nil)
	assert.Equal(t, []string{"web-1 Started", "web-1 Complete", "web-3 Started", "web-3 Failed", "web-3 RolledBack"}, events(occ))
	assert.Equal(t, "TimedOut", occ[3].Payload.Reason)
	assert.Equal(t, "hook pod web-3-hook-pre failed with exit code 1", occ[3].Payload.Message)
	assert.Equal(t, "migrating\nboom", occ[3].Payload.LogTail)
	assert.Equal(t, []string{"web:1"}, occ[3].Payload.Images)
	assert.Contains(t, occ[4].Payload.Message, "rolled back to web-1")

	frozen := dc.DeepCopy()
	frozen.Spec.Strategy.OnFailure = v1alpha1.OnFailureFreeze
	frozen.Status.LatestVersion = 3 // its status does not name the freeze yet
	assert.Equal(t, []string{"web-1 Started", "web-1 Complete", "web-3 Started", "web-3 Failed", "web-3 Frozen"},
		events(Happened(frozen, []*appsv1.ReplicaSet{rev(1, v1alpha1.RevisionPhaseComplete, nil),
			rev(3, v1alpha1.RevisionPhaseFailed, map[string]string{v1alpha1.StatusReasonAnnotation: failed})}, nil)))

	assert.Equal(t, []string{"web-4 Failed"}, events(Happened(dc, []*appsv1.ReplicaSet{
		rev(4, v1alpha1.RevisionPhaseFailed, map[string]string{v1alpha1.StatusReasonAnnotation: "Cancelled: by the user"})}, nil)),
		"a revision cancelled before it ran did not start, and nothing serves to roll back to")
	assert.Equal(t, []string{"web-1 Started", "web-1 Complete", "web-6 Failed"}, events(Happened(dc, []*appsv1.ReplicaSet{
		rev(1, v1alpha1.RevisionPhaseComplete, nil),
		rev(6, v1alpha1.RevisionPhaseFailed, map[string]string{v1alpha1.StatusReasonAnnotation: "Superseded: by web-7"}),
		rev(7, v1alpha1.RevisionPhaseNew, nil)}, nil)),
		"a superseded revision failed and rolled nothing back")
	assert.Equal(t, []string{"web-5 Waiting"}, events(Happened(dc, []*appsv1.ReplicaSet{
		rev(5, v1alpha1.RevisionPhaseNew, map[string]string{v1alpha1.WaitingAnnotation: "ExceededQuota: pods are forbidden"})}, nil)))
}
