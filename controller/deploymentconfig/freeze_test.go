package deploymentconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// frozenFixture is a DC with onFailure: Freeze at revision 2, which Failed with the given
// status reason while revision 1 (Complete) still runs 2 of spec.replicas 4 pods and
// revision 2 runs 3. withPod adds revision 2's deployer pod, Failed. old changes
// revision 1.
func frozenFixture(t *testing.T, reason string, withPod bool, change func(*v1alpha1.DeploymentConfig), old ...func(*appsv1.ReplicaSet)) *fixture {
	t.Helper()
	dc := controllertest.WithLatest(controllertest.DC("web", "app:2", 4), 2)
	dc.Spec.Strategy.OnFailure = v1alpha1.OnFailureFreeze
	rs1 := controllertest.Revision(t, controllertest.DC("web", "app:1", 4), 1, v1alpha1.RevisionPhaseComplete, 2)
	rs2 := controllertest.Revision(t, dc, 2, v1alpha1.RevisionPhaseFailed, 3)
	rs2.Annotations[v1alpha1.StatusReasonAnnotation] = reason + ": it went wrong"
	if reason == v1alpha1.ReasonCancelled {
		rs2.Annotations[v1alpha1.CancelledAnnotation] = "true"
	}
	if change != nil {
		change(dc)
	}
	for _, o := range old {
		o(rs1)
	}
	objs := []runtime.Object{rs1, rs2}
	if withPod {
		objs = append(objs, deployerPod(t, rs2, corev1.PodFailed))
	}
	return newFixture(t, []*v1alpha1.DeploymentConfig{dc}, objs...)
}

func eventsOf(f *fixture) []string {
	var events []string
	for len(f.Events.Events) > 0 {
		events = append(events, <-f.Events.Events)
	}
	return events
}

// With onFailure: Freeze, however the latest revision Failed, no revision is scaled:
// both keep the replicas they had, and the status says Frozen with what to do next.
func TestSyncFreezeKeepsEveryRevisionsReplicas(t *testing.T) {
	tests := []struct {
		name    string
		reason  string
		withPod bool
	}{
		{name: "deployer exited non-zero", reason: v1alpha1.ReasonFailed, withPod: true},
		{name: "hook failed", reason: v1alpha1.ReasonHookFailed, withPod: true},
		{name: "timed out", reason: v1alpha1.ReasonTimedOut, withPod: true},
		{name: "deadline exceeded", reason: v1alpha1.ReasonDeadlineExceeded, withPod: true},
		{name: "cancelled", reason: v1alpha1.ReasonCancelled},
		{name: "deployer pod gone", reason: v1alpha1.ReasonDeployerPodGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := frozenFixture(t, tt.reason, tt.withPod, nil)

			require.NoError(t, f.syncDC("web"))

			assert.NotContains(t, f.Actions(), "update replicasets")
			assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas)
			assert.Equal(t, int32(3), *f.GetRS("web-2").Spec.Replicas)
			got := f.GetDC("web")
			assert.Equal(t, "web-2", got.Status.Frozen)
			assert.Equal(t, v1alpha1.RevisionPhaseFailed, got.Status.Phase, "the phase stays the latest revision's")
			p := condition(t, got, v1alpha1.ConditionProgressing)
			assert.Equal(t, v1alpha1.ReasonRolloutFrozen, p.Reason)
			for _, want := range []string{"web-2", "rollout retry", "rollout undo", "kubectl stagehand set"} {
				assert.Contains(t, p.Message, want)
			}
		})
	}
}

// The RolloutFrozen event is recorded once, when the status first says Frozen.
func TestSyncFreezeWarnsOnce(t *testing.T) {
	f := frozenFixture(t, v1alpha1.ReasonTimedOut, true, nil)
	require.NoError(t, f.syncDC("web"))
	f.Cache(f.GetDC("web"))
	require.NoError(t, f.syncDC("web"))

	frozen := 0
	for _, e := range eventsOf(f) {
		if strings.HasPrefix(e, "Warning "+v1alpha1.EventRolloutFrozen+" Revision web-2 failed") {
			frozen++
		}
	}
	assert.Equal(t, 1, frozen)
}

// A spec.replicas change while frozen scales nothing either.
func TestSyncFreezeIgnoresReplicasChanges(t *testing.T) {
	f := frozenFixture(t, v1alpha1.ReasonFailed, true, func(dc *v1alpha1.DeploymentConfig) {
		six := int32(6)
		dc.Spec.Replicas = &six
	})
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "update replicasets")
	assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas)
	assert.Equal(t, int32(3), *f.GetRS("web-2").Spec.Replicas)
	assert.Equal(t, "web-2", f.GetDC("web").Status.Frozen)
}

// Once a newer revision (rollout undo here) has ended, scaling works as today: the newest
// Complete revision runs spec.replicas, the others 0, and the status is no longer frozen.
func TestSyncFreezeEndsWithANewRevision(t *testing.T) {
	f := frozenFixture(t, v1alpha1.ReasonFailed, true, func(dc *v1alpha1.DeploymentConfig) {
		dc.Status.LatestVersion = 3
		dc.Status.Frozen = "web-2"
		dc.Spec.Template.Spec.Containers[0].Image = "app:1" // what the undo wrote back
	})
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 4), 3)
	dc.Spec.Strategy.OnFailure = v1alpha1.OnFailureFreeze
	rs3 := controllertest.Revision(t, dc, 3, v1alpha1.RevisionPhaseComplete, 4)
	require.NoError(t, f.Kube.Tracker().Add(rs3))
	f.Cache(rs3)

	require.NoError(t, f.syncDC("web"))

	for name, want := range map[string]int32{"web-1": 0, "web-2": 0, "web-3": 4} {
		assert.Equal(t, want, *f.GetRS(name).Spec.Replicas, name)
	}
	got := f.GetDC("web")
	assert.Empty(t, got.Status.Frozen)
	assert.Equal(t, v1alpha1.ReasonRolloutComplete, condition(t, got, v1alpha1.ConditionProgressing).Reason)
}

// With the default onFailure (Rollback) a failure still rolls back.
func TestSyncOnFailureDefaultRollsBack(t *testing.T) {
	f := frozenFixture(t, v1alpha1.ReasonFailed, true, func(dc *v1alpha1.DeploymentConfig) {
		dc.Spec.Strategy.OnFailure = ""
	})
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, int32(4), *f.GetRS("web-1").Spec.Replicas)
	assert.Equal(t, int32(0), *f.GetRS("web-2").Spec.Replicas)
	assert.Empty(t, f.GetDC("web").Status.Frozen)
}

// While frozen, a BeforeScaleDown request that no DeferPolicy has served yet is withdrawn,
// so that nothing scales; one whose pods were already chosen is left to finish, because
// their steps ran and they must not keep serving (DESIGN.md §4 invariant 8).
func TestSyncFreezeWithdrawsUnservedScaleDowns(t *testing.T) {
	f := frozenFixture(t, v1alpha1.ReasonTimedOut, true, nil, func(rs *appsv1.ReplicaSet) {
		v1alpha1.SetDeferScaleDownRequest(rs, 1)
	})
	require.NoError(t, f.syncDC("web"))
	assert.False(t, v1alpha1.HasDeferScaleDownRequest(f.GetRS("web-1")), "the unserved request is withdrawn")
	assert.Equal(t, int32(2), *f.GetRS("web-1").Spec.Replicas)

	f = frozenFixture(t, v1alpha1.ReasonTimedOut, true, nil, func(rs *appsv1.ReplicaSet) {
		v1alpha1.SetDeferScaleDownRequest(rs, 1)
		v1alpha1.SetDeferScaleDownChoice(rs, 1, []string{"web-1-a"})
	})
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "update replicasets")
	assert.True(t, v1alpha1.HasDeferScaleDownRequest(f.GetRS("web-1")), "a served request is carried out")
}
