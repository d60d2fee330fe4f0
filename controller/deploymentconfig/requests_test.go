package deploymentconfig

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

func withRequest(dc *v1alpha1.DeploymentConfig, req v1alpha1.RolloutRequest) *v1alpha1.DeploymentConfig {
	dc = dc.DeepCopy()
	if dc.Annotations == nil {
		dc.Annotations = map[string]string{}
	}
	dc.Annotations[v1alpha1.RolloutRequestAnnotation] = req.Encode()
	return dc
}

func TestSyncRolloutRequestCreatesRevision(t *testing.T) {
	tests := []struct {
		name        string
		req         v1alpha1.RolloutRequest
		paused      bool
		wantNew     bool
		wantCause   string
		wantMessage string
	}{
		{name: "manual rollout without any trigger", wantNew: true, wantCause: "Manual", wantMessage: "manual rollout",
			req: v1alpha1.RolloutRequest{ID: "a", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 1}},
		{name: "rollback", wantNew: true, wantCause: "Rollback", wantMessage: "rollback to revision 1",
			req: v1alpha1.RolloutRequest{ID: "b", Action: v1alpha1.RolloutRequestRollback, LatestVersion: 1, RollbackTo: 1}},
		{name: "a request answered by an earlier revision is done",
			req: v1alpha1.RolloutRequest{ID: "c", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 0}},
		{name: "paused: the request waits", paused: true,
			req: v1alpha1.RolloutRequest{ID: "d", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
			base.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{}
			base.Spec.Paused = tt.paused
			rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
			dc := withRequest(base, tt.req)
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

			require.NoError(t, f.syncDC("web"))

			got := f.GetDC("web")
			if !tt.wantNew {
				assert.Equal(t, int64(1), got.Status.LatestVersion)
				assert.NotContains(t, f.Actions(), "create replicasets")
				return
			}
			assert.Equal(t, int64(2), got.Status.LatestVersion)
			assert.Equal(t, tt.wantCause, string(got.Status.Details.Causes[0].Type))
			assert.Equal(t, tt.wantMessage, got.Status.Details.Message)
			rs := f.GetRS("web-2")
			assert.Equal(t, tt.wantCause, rs.Annotations[v1alpha1.CauseAnnotation])
			assert.Equal(t, tt.req.ID, rs.Annotations[v1alpha1.RequestAnnotation])
			if tt.req.RollbackTo > 0 {
				assert.Equal(t, "1", rs.Annotations[v1alpha1.RollbackToAnnotation])
			}
		})
	}
}

// A crash between the latestVersion bump and the ReplicaSet's creation leaves the request
// on the DC: the repaired revision still carries the request's cause and ID.
func TestSyncRepairedRevisionKeepsTheRequestCause(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 2)
	base.Status.Details = &v1alpha1.DeploymentDetails{Message: "rollback to revision 1",
		Causes: []v1alpha1.DeploymentCause{{Type: v1alpha1.DeploymentCauseRollback}}}
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	dc := withRequest(base, v1alpha1.RolloutRequest{ID: "r", Action: v1alpha1.RolloutRequestRollback, LatestVersion: 1, RollbackTo: 1})
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

	require.NoError(t, f.syncDC("web"))

	rs := f.GetRS("web-2")
	assert.Equal(t, "Rollback", rs.Annotations[v1alpha1.CauseAnnotation])
	assert.Equal(t, "r", rs.Annotations[v1alpha1.RequestAnnotation])
	assert.Equal(t, "1", rs.Annotations[v1alpha1.RollbackToAnnotation])
	assert.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion, "no third revision")
}

func TestSyncRetryResetsTheFailedRevisionOnceItsPodsAreGone(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 2)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	rs2 := controllertest.Revision(t, base, 2, v1alpha1.RevisionPhaseFailed, 0)
	rs2.Annotations[v1alpha1.StatusReasonAnnotation] = "HookFailed: pre hook exited 1"
	deployer := deployerPod(t, rs2, corev1.PodFailed)
	hook := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2-hook-pre", Namespace: "ns", UID: "uid-hook", Labels: map[string]string{
		v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2", v1alpha1.HookStageLabel: "pre"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs2.Name, UID: rs2.UID}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	dc := withRequest(base, v1alpha1.RolloutRequest{ID: "x", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 2})
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2, deployer, hook)

	// The failed rollout's pods are deleted first; the revision stays Failed meanwhile.
	err := f.syncDC("web")
	require.Error(t, err, "requeued until the pods are gone")
	assert.Contains(t, f.Actions(), "delete pods")
	assert.Equal(t, "Failed", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])

	// Once they are gone, one reset to New carries the request's ID.
	require.NoError(t, f.syncDC("web"))
	rs := f.GetRS("web-2")
	assert.Equal(t, "New", rs.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "x", rs.Annotations[v1alpha1.RequestAnnotation])
	assert.NotEmpty(t, rs.Annotations[v1alpha1.RetriedAtAnnotation], "deadlines count from the retry")
	assert.NotContains(t, rs.Annotations, v1alpha1.StatusReasonAnnotation)
	assert.Equal(t, int64(2), f.GetDC("web").Status.LatestVersion, "a retry creates no revision")

	// When the retried revision fails again, the same request does not retry it again.
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseFailed)
	f.Cache(rs)
	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "update replicasets")
}

func TestSyncInvalidRolloutRequestIsAnEventNotAnError(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	dc.Annotations = map[string]string{v1alpha1.RolloutRequestAnnotation: "{not json"}
	rs1 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseComplete, 2)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1)

	require.NoError(t, f.syncDC("web"))

	var events []string
	for len(f.Events.Events) > 0 {
		events = append(events, <-f.Events.Events)
	}
	assert.Contains(t, strings.Join(events, "\n"), "Warning InvalidRolloutRequest Ignoring the rollout request")
	assert.Equal(t, int64(1), f.GetDC("web").Status.LatestVersion)
}

// A retry waits while the revision's failed hook has not finished: nothing of the
// revision is deleted or reset (e2e TestRetryWaitsForTheRunningFailureHook shows the retry
// going on once the hook has ended).
func TestSyncRetryWaitsForTheFailureHook(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 2)
	base.Spec.Strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Failed: &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyIgnore,
		ExecNewPod:    &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"./migrate", "down"}}}}
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	rs2 := controllertest.Revision(t, base, 2, v1alpha1.RevisionPhaseFailed, 0)
	rs2.Annotations[v1alpha1.FailureHookAnnotation] = string(v1alpha1.FailureHookRunning)
	dc := withRequest(base, v1alpha1.RolloutRequest{ID: "x", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 2})
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2, deployerPod(t, rs2, corev1.PodFailed))

	require.NoError(t, f.syncDC("web"))
	assert.NotContains(t, f.Actions(), "delete pods")
	assert.Equal(t, "Failed", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, string(v1alpha1.FailureHookRunning), f.GetRS("web-2").Annotations[v1alpha1.FailureHookAnnotation])
}

// A retry runs every exec hook again (invariant 11): the failed run's ExecutionHooks, those
// the revision owns, are deleted before the reset to New, which waits until they are gone.
// An ExecutionHook that carries the label but belongs to another object stays.
func TestSyncRetryDeletesTheFailedRunsExecutionHooks(t *testing.T) {
	base := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 2)
	rs1 := controllertest.Revision(t, base, 1, v1alpha1.RevisionPhaseComplete, 2)
	rs2 := controllertest.Revision(t, base, 2, v1alpha1.RevisionPhaseFailed, 0)
	dc := withRequest(base, v1alpha1.RolloutRequest{ID: "x", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 2})
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs1, rs2)
	hook := func(name string, owner *appsv1.ReplicaSet) *v1alpha1.ExecutionHook {
		return &v1alpha1.ExecutionHook{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels:          map[string]string{v1alpha1.ExecHookOfLabel: "web-2"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID}}}}
	}
	hooks := f.Stagehand.StagehandV1alpha1().ExecutionHooks("ns")
	for _, h := range []*v1alpha1.ExecutionHook{hook("web-2-post", rs2), hook("stranger", rs1)} {
		_, err := hooks.Create(context.Background(), h, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// The failed run's ExecutionHook is deleted first; the revision stays Failed meanwhile.
	require.Error(t, f.syncDC("web"), "requeued until the ExecutionHooks are gone")
	assert.Equal(t, "Failed", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])
	_, err := hooks.Get(context.Background(), "web-2-post", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the revision's ExecutionHook is deleted: %v", err)
	_, err = hooks.Get(context.Background(), "stranger", metav1.GetOptions{})
	assert.NoError(t, err, "an ExecutionHook the revision does not own stays")

	// Once it is gone, the revision is reset to New.
	require.NoError(t, f.syncDC("web"))
	assert.Equal(t, "New", f.GetRS("web-2").Annotations[v1alpha1.PhaseAnnotation])
}
