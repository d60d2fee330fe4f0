package rollout

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// specWith is a DC spec running image, with an automatic ImageChange trigger on it.
func specWith(image string, replicas int32, strategy v1alpha1.DeploymentStrategyType) v1alpha1.DeploymentConfigSpec {
	return v1alpha1.DeploymentConfigSpec{
		Replicas: ptr.To(replicas),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		},
		Triggers: []v1alpha1.DeploymentTriggerPolicy{
			{Type: v1alpha1.DeploymentTriggerOnConfigChange},
			{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
				Automatic: image != "app@sha256:1", ContainerNames: []string{"app"}, From: v1alpha1.ImageReference{Image: "registry.example/app:stable"}}},
		},
		Strategy: v1alpha1.DeploymentStrategy{Type: strategy},
	}
}

// revisionRS is revision n as the controller leaves it, with spec as its snapshot.
func revisionRS(t *testing.T, n int64, phase v1alpha1.RevisionPhase, spec v1alpha1.DeploymentConfigSpec) *appsv1.ReplicaSet {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	name := v1alpha1.RevisionName("web", n)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.RevisionLabel: strconv.FormatInt(n, 10)},
			Annotations: map[string]string{v1alpha1.PhaseAnnotation: string(phase), v1alpha1.ConfigSnapshotAnnotation: string(raw)}},
		Spec: appsv1.ReplicaSetSpec{Template: spec.Template},
	}
}

// history is web with revisions 1 (app@sha256:1, Recreate, 5 replicas), 2 (app:2, Failed)
// and 3 (app:3, the current spec).
func history(t *testing.T, latestPhase v1alpha1.RevisionPhase) *State {
	current := specWith("app:3", 2, v1alpha1.DeploymentStrategyTypeRolling)
	return &State{
		DC: &v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: current,
			Status: v1alpha1.DeploymentConfigStatus{LatestVersion: 3}},
		Revisions: []*appsv1.ReplicaSet{
			revisionRS(t, 1, v1alpha1.RevisionPhaseComplete, specWith("app@sha256:1", 5, v1alpha1.DeploymentStrategyTypeRecreate)),
			revisionRS(t, 2, v1alpha1.RevisionPhaseFailed, specWith("app:2", 2, v1alpha1.DeploymentStrategyTypeRolling)),
			revisionRS(t, 3, latestPhase, current),
		},
	}
}

func TestPlanRollback(t *testing.T) {
	tests := []struct {
		name          string
		latest        v1alpha1.RevisionPhase
		opts          RollbackOptions
		wantTo        int64
		wantImage     string
		wantReplicas  int32
		wantStrategy  v1alpha1.DeploymentStrategyType
		wantAutomatic bool // the ImageChange trigger after the rollback
		wantSupersede string
	}{
		{name: "default: the previous Complete revision, template only, with its digest",
			latest: v1alpha1.RevisionPhaseComplete, wantTo: 1, wantImage: "app@sha256:1", wantReplicas: 2,
			wantStrategy: v1alpha1.DeploymentStrategyTypeRolling},
		{name: "an explicit revision, even a Failed one",
			latest: v1alpha1.RevisionPhaseComplete, opts: RollbackOptions{ToRevision: 2}, wantTo: 2, wantImage: "app:2",
			wantReplicas: 2, wantStrategy: v1alpha1.DeploymentStrategyTypeRolling},
		{name: "configuration rollback: strategy, scaling and triggers too",
			latest: v1alpha1.RevisionPhaseComplete,
			opts:   RollbackOptions{ChangeStrategy: true, ChangeScalingSettings: true, ChangeTriggers: true},
			wantTo: 1, wantImage: "app@sha256:1", wantReplicas: 5, wantStrategy: v1alpha1.DeploymentStrategyTypeRecreate},
		{name: "a rollout in flight is superseded",
			latest: v1alpha1.RevisionPhaseRunning, wantTo: 1, wantImage: "app@sha256:1", wantReplicas: 2,
			wantStrategy: v1alpha1.DeploymentStrategyTypeRolling, wantSupersede: "web-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planRollback(history(t, tt.latest), tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.wantTo, plan.To)
			assert.Equal(t, int64(3), plan.From)
			assert.Equal(t, tt.wantImage, plan.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(t, tt.wantReplicas, *plan.Spec.Replicas)
			assert.Equal(t, tt.wantStrategy, plan.Spec.Strategy.Type)
			assert.Equal(t, tt.wantAutomatic, plan.Spec.Triggers[1].ImageChangeParams.Automatic)
			assert.Equal(t, tt.wantSupersede, plan.Supersedes)
			assert.Equal(t, "app:3", plan.Current.Template.Spec.Containers[0].Image, "the plan does not touch the current spec")
		})
	}
}

func TestPlanRollbackSwitchesOffAutomaticImageTriggers(t *testing.T) {
	plan, err := planRollback(history(t, v1alpha1.RevisionPhaseComplete), RollbackOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"registry.example/app:stable (containers app)"}, plan.DisabledTriggers)
	assert.False(t, plan.Spec.Triggers[1].ImageChangeParams.Automatic)

	diff, err := plan.Diff()
	require.NoError(t, err)
	assert.Contains(t, diff, "-    - image: app:3\n")
	assert.Contains(t, diff, "+    - image: app@sha256:1\n")
	assert.Contains(t, diff, "-    automatic: true\n")
}

func TestPlanRollbackRefusals(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*State)
		opts    RollbackOptions
		wantErr string
	}{
		{name: "paused", mutate: func(s *State) { s.DC.Spec.Paused = true }, wantErr: "deploymentconfig/web is paused: resume it first"},
		{name: "the latest revision", opts: RollbackOptions{ToRevision: 3}, wantErr: "revision 3 is not an earlier revision"},
		{name: "pruned", mutate: func(s *State) { s.Revisions = s.Revisions[1:] }, opts: RollbackOptions{ToRevision: 1},
			wantErr: "revision 1 of deploymentconfig/web no longer exists: it was pruned (revisionHistoryLimit). Kept: 2 Failed, 3 Complete"},
		{name: "no earlier Complete revision", mutate: func(s *State) { s.Revisions = s.Revisions[1:] },
			wantErr: "has no Complete revision before revision 3 to roll back to (2 Failed, 3 Complete)"},
		{name: "a request is waiting", mutate: func(s *State) {
			s.DC.Annotations = map[string]string{v1alpha1.RolloutRequestAnnotation: (&v1alpha1.RolloutRequest{
				ID: "x", Action: v1alpha1.RolloutRequestLatest, LatestVersion: 3}).Encode()}
		}, wantErr: "a Latest request of deploymentconfig/web is already waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := history(t, v1alpha1.RevisionPhaseComplete)
			if tt.mutate != nil {
				tt.mutate(st)
			}
			_, err := planRollback(st, tt.opts)
			var refusal *Refused
			require.ErrorAs(t, err, &refusal)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestInFlight(t *testing.T) {
	st := history(t, v1alpha1.RevisionPhaseComplete)
	assert.Empty(t, st.inFlight())

	st = history(t, v1alpha1.RevisionPhasePending)
	assert.Equal(t, "revision web-3 is Pending", st.inFlight())

	st = history(t, v1alpha1.RevisionPhaseComplete)
	st.DC.Status.LatestVersion = 4
	assert.Equal(t, "revision 4 is being created", st.inFlight())

	// A retry request is done once the revision carries its ID.
	st = history(t, v1alpha1.RevisionPhaseFailed)
	st.DC.Annotations = map[string]string{v1alpha1.RolloutRequestAnnotation: (&v1alpha1.RolloutRequest{
		ID: "r", Action: v1alpha1.RolloutRequestRetry, LatestVersion: 3}).Encode()}
	assert.Equal(t, "a Retry request is waiting for the controller (revision 4)", st.inFlight())
	st.Revisions[2].Annotations[v1alpha1.RequestAnnotation] = "r"
	assert.Empty(t, st.inFlight(), "the retried revision failed again: nothing is in flight")
}

func TestHistoryTexts(t *testing.T) {
	assert.Equal(t, "Rollback to 2", causeText(map[string]string{v1alpha1.CauseAnnotation: "Rollback", v1alpha1.RollbackToAnnotation: "2"}))
	assert.Equal(t, "ImageChange reg/app:stable", causeText(map[string]string{v1alpha1.CauseAnnotation: "ImageChange",
		v1alpha1.ImageTriggerAnnotation: "reg/app:stable -> reg/app@sha256:1"}))
	assert.Equal(t, "Manual", causeText(map[string]string{v1alpha1.CauseAnnotation: "Manual"}))
	assert.Equal(t, "unknown", causeText(nil))
	assert.Equal(t, "Failed (Cancelled)", HistoryEntry{Phase: "Failed", Reason: "Cancelled: cancelled by the user"}.StatusText())
	assert.Equal(t, "Complete", HistoryEntry{Phase: "Complete", Reason: "Completed"}.StatusText())
}
