package deploymentconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func TestRevisionsToPrune(t *testing.T) {
	dc := controllertest.DC("web", "app:1", 1)
	rev := func(n int64, phase v1alpha1.RevisionPhase, replicas int32) *appsv1.ReplicaSet {
		return controllertest.Revision(t, dc, n, phase, replicas)
	}
	names := func(rss []*appsv1.ReplicaSet) []string {
		var out []string
		for _, rs := range rss {
			out = append(out, rs.Name)
		}
		return out
	}
	tests := []struct {
		name   string
		revs   []*appsv1.ReplicaSet
		latest int64
		limit  int32
		want   []string
	}{
		{name: "within the limit", revs: []*appsv1.ReplicaSet{rev(1, "Complete", 0), rev(2, "Complete", 1)}, latest: 2, limit: 1},
		{name: "oldest first", revs: []*appsv1.ReplicaSet{rev(1, "Failed", 0), rev(2, "Complete", 0), rev(3, "Failed", 0), rev(4, "Complete", 1)}, latest: 4, limit: 1, want: []string{"web-1", "web-2"}},
		{name: "limit 0 keeps latest and active", revs: []*appsv1.ReplicaSet{rev(1, "Complete", 0), rev(2, "Complete", 3), rev(3, "Failed", 0)}, latest: 3, limit: 0, want: []string{"web-1"}},
		{name: "revisions with pods stay", revs: []*appsv1.ReplicaSet{rev(1, "Complete", 2), rev(2, "Failed", 0), rev(3, "Complete", 1)}, latest: 3, limit: 0, want: []string{"web-2"}},
		{name: "non-terminal stays", revs: []*appsv1.ReplicaSet{rev(1, "Running", 0), rev(2, "Complete", 1)}, latest: 2, limit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, names(revisionsToPrune(tt.revs, tt.latest, tt.limit)))
		})
	}
}

func TestComputeStatus(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 4), 2)
	dc.Generation = 5
	v1alpha1.SetDefaults(dc)
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 1)
	rs1.Status = appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseRunning, 3)
	rs2.Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}

	s := computeStatus(dc, []*appsv1.ReplicaSet{rs1, rs2}, rs2)
	assert.Equal(t, int32(4), s.Replicas)
	assert.Equal(t, int32(3), s.UpdatedReplicas)
	assert.Equal(t, int32(3), s.ReadyReplicas)
	assert.Equal(t, int32(3), s.AvailableReplicas)
	assert.Equal(t, int32(1), s.UnavailableReplicas)
	assert.Equal(t, "app=web,stagehand.dev/config=web,!stagehand.dev/deployer-pod-for,!stagehand.dev/hook", s.Selector)
	assert.Equal(t, v1alpha1.RevisionPhaseRunning, s.Phase)
	assert.Equal(t, int64(5), s.ObservedGeneration)
	// Rolling, 4 replicas, maxUnavailable 25%: 3 available is enough.
	assert.Equal(t, metav1.ConditionTrue, condition(t, &v1alpha1.DeploymentConfig{Status: s}, "Available").Status)
	assert.Equal(t, v1alpha1.ReasonNewReplicaSetCreated, condition(t, &v1alpha1.DeploymentConfig{Status: s}, "Progressing").Reason)

	// A New revision whose deployer pod waits for quota says so, and what for.
	rs2.Annotations[v1alpha1.PhaseAnnotation] = "New"
	rs2.Annotations[v1alpha1.WaitingAnnotation] = "DeployerPodWaiting: exceeded quota: q, requested: limits.cpu=500m"
	s = computeStatus(dc, []*appsv1.ReplicaSet{rs1, rs2}, rs2)
	p := condition(t, &v1alpha1.DeploymentConfig{Status: s}, "Progressing")
	assert.Equal(t, v1alpha1.ReasonDeployerPodWaiting, p.Reason)
	assert.Equal(t, metav1.ConditionTrue, p.Status, "waiting is not failing")
	assert.Equal(t, "revision web-2 is waiting: exceeded quota: q, requested: limits.cpu=500m", p.Message)

	rs2.Annotations[v1alpha1.PhaseAnnotation] = "Failed"
	rs2.Annotations[v1alpha1.StatusReasonAnnotation] = "HookFailed: boom"
	s = computeStatus(dc, []*appsv1.ReplicaSet{rs1, rs2}, rs2)
	p = condition(t, &v1alpha1.DeploymentConfig{Status: s}, "Progressing")
	assert.Equal(t, v1alpha1.ReasonRolloutFailed, p.Reason)
	assert.Equal(t, metav1.ConditionFalse, p.Status)
	assert.Contains(t, p.Message, "HookFailed: boom")
}
