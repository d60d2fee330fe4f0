package revision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func rs(name, number string, owner types.UID, annotations map[string]string) *appsv1.ReplicaSet {
	controller := true
	r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: number},
		Annotations: annotations,
	}}
	if owner != "" {
		r.OwnerReferences = []metav1.OwnerReference{{UID: owner, Kind: "DeploymentConfig", Name: "web", Controller: &controller}}
	}
	return r
}

func TestNumber(t *testing.T) {
	for _, tt := range []struct {
		label string
		want  int64
		ok    bool
	}{{"3", 3, true}, {"0", 0, false}, {"-1", -1, false}, {"x", 0, false}, {"", 0, false}} {
		n, ok := Number(rs("web-"+tt.label, tt.label, "", nil))
		assert.Equal(t, tt.ok, ok, tt.label)
		if ok {
			assert.Equal(t, tt.want, n, tt.label)
		}
	}
}

func TestPhaseDefaultsToNew(t *testing.T) {
	assert.Equal(t, v1alpha1.RevisionPhaseNew, Phase(rs("web-1", "1", "", nil)))
	assert.Equal(t, v1alpha1.RevisionPhaseRunning, Phase(rs("web-1", "1", "", map[string]string{v1alpha1.PhaseAnnotation: "Running"})))
	assert.Less(t, PhaseRank(v1alpha1.RevisionPhasePending), PhaseRank(v1alpha1.RevisionPhaseRunning))
	assert.Equal(t, PhaseRank(v1alpha1.RevisionPhaseComplete), PhaseRank(v1alpha1.RevisionPhaseFailed))
}

func TestOwnedSortsAndFilters(t *testing.T) {
	mine := types.UID("dc-uid")
	all := []*appsv1.ReplicaSet{
		rs("web-10", "10", mine, map[string]string{v1alpha1.PhaseAnnotation: "Failed"}),
		rs("web-2", "2", mine, map[string]string{v1alpha1.PhaseAnnotation: "Complete"}),
		rs("other-1", "1", "someone-else", nil),
		rs("web-x", "x", mine, nil),
		rs("orphan-3", "3", "", nil),
		rs("web-9", "9", mine, map[string]string{v1alpha1.PhaseAnnotation: "Complete"}),
	}
	owned := Owned(mine, all)
	var names []string
	for _, r := range owned {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"web-2", "web-9", "web-10"}, names, "numeric order, only this owner's valid revisions")
	assert.Equal(t, "web-9", NewestComplete(owned).Name)
	assert.Equal(t, "web-10", Find(owned, 10).Name)
	assert.Nil(t, Find(owned, 3))
	assert.Empty(t, Owned("", all), "an owner without a UID owns nothing")
}

func TestSnapshot(t *testing.T) {
	_, err := Snapshot(rs("web-1", "1", "", nil))
	assert.ErrorContains(t, err, v1alpha1.ConfigSnapshotAnnotation)
	_, err = Snapshot(rs("web-1", "1", "", map[string]string{v1alpha1.ConfigSnapshotAnnotation: "{"}))
	assert.ErrorContains(t, err, "not a DeploymentConfig spec")
	spec, err := Snapshot(rs("web-1", "1", "", map[string]string{v1alpha1.ConfigSnapshotAnnotation: `{"replicas":3}`}))
	require.NoError(t, err)
	assert.Equal(t, int32(3), *spec.Replicas)
}

func TestDesiredReplicasAndStatusReason(t *testing.T) {
	r := rs("web-1", "1", "", map[string]string{
		v1alpha1.DesiredReplicasAnnotation: "4",
		v1alpha1.StatusReasonAnnotation:    FormatStatusReason("HookFailed", "pre: exit 1: a: b"),
	})
	n, err := DesiredReplicas(r)
	require.NoError(t, err)
	assert.Equal(t, int32(4), n)
	reason, msg := StatusReason(r)
	assert.Equal(t, "HookFailed", reason)
	assert.Equal(t, "pre: exit 1: a: b", msg)
	_, err = DesiredReplicas(rs("web-2", "2", "", map[string]string{v1alpha1.DesiredReplicasAnnotation: "-1"}))
	assert.ErrorContains(t, err, v1alpha1.DesiredReplicasAnnotation)
	assert.Equal(t, "Completed", FormatStatusReason("Completed", ""))
}

func TestHookPodsSelector(t *testing.T) {
	r := rs("web-3", "3", "", nil)
	hook := map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3", v1alpha1.HookStageLabel: "pre"}
	assert.True(t, HookPods(r, "").Matches(labels.Set(hook)))
	assert.True(t, HookPods(r, "pre").Matches(labels.Set(hook)))
	assert.False(t, HookPods(r, "post").Matches(labels.Set(hook)))
	app := map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "3"}
	assert.False(t, HookPods(r, "").Matches(labels.Set(app)), "an app pod of the revision is no hook pod")
	other := map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "4", v1alpha1.HookStageLabel: "pre"}
	assert.False(t, HookPods(r, "").Matches(labels.Set(other)))
	assert.True(t, DeployerPods().Matches(labels.Set{v1alpha1.DeployerPodForLabel: "web-3"}))
	assert.False(t, DeployerPods().Matches(labels.Set(app)))
}

func TestDeadlines(t *testing.T) {
	seconds := func(n int64) *int64 { return &n }
	assert.Equal(t, 42*time.Second, Timeout(&v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
		RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: seconds(42)}}))
	assert.Equal(t, 7*time.Second, Timeout(&v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
		RollingParams: &v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: seconds(7)}}))
	assert.Equal(t, 600*time.Second, Timeout(&v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeCustom}))
	assert.Equal(t, 6*time.Hour, ActiveDeadline(&v1alpha1.DeploymentStrategy{}))
	assert.Equal(t, time.Minute, ActiveDeadline(&v1alpha1.DeploymentStrategy{ActiveDeadlineSeconds: seconds(60)}))
}

func TestOwnerConfigAndSuperseded(t *testing.T) {
	owned := rs("web-1", "1", "uid", map[string]string{v1alpha1.StatusReasonAnnotation: "Superseded: by web-2"})
	owned.OwnerReferences[0].APIVersion = v1alpha1.SchemeGroupVersion.String()
	assert.Equal(t, "web", OwnerConfig(owned))
	assert.True(t, Superseded(owned))
	foreign := rs("web-2", "2", "uid", nil)
	foreign.OwnerReferences[0].APIVersion = "apps/v1"
	foreign.OwnerReferences[0].Kind = "Deployment"
	assert.Equal(t, "", OwnerConfig(foreign), "a ReplicaSet of a Deployment has no DeploymentConfig")
	assert.Equal(t, "", OwnerConfig(rs("web-3", "3", "", nil)))
	assert.False(t, Superseded(foreign))
}
