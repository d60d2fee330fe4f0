package rollout

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

const (
	stsHash1 = "db-7f9c6d5b8"
	stsHash2 = "db-5d4c8b7f6"
)

// newSTSFollowFixture is the StatefulSet DC db, 3 replicas, whose revision 1 is Complete
// (template hash stsHash1) and revision 2 is Running (stsHash2), recorded as
// ControllerRevisions, with no pods yet.
func newSTSFollowFixture(t *testing.T) *followFixture {
	dc := testutil.DeploymentConfig("db", "db:2", 3, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
	dc.Status.LatestVersion = 2
	x := newFollowFixture(t, dc)
	x.createRecord(1, v1alpha1.RevisionPhaseComplete, stsHash1)
	x.createRecord(2, v1alpha1.RevisionPhaseRunning, stsHash2)
	return x
}

// createRecord records revision n of the fixture's StatefulSet DC as its ControllerRevision.
func (x *followFixture) createRecord(n int64, phase v1alpha1.RevisionPhase, hash string) {
	rs := x.revision(n, phase)
	rs.Namespace = followNS
	rs.Spec.Replicas = new(int32(0))
	if hash != "" {
		rs.Annotations[v1alpha1.TemplateHashAnnotation] = hash
	}
	cr, err := revision.ToControllerRevision(rs)
	require.NoError(x.t, err)
	_, err = x.c.Kube.AppsV1().ControllerRevisions(followNS).Create(context.Background(), cr, metav1.CreateOptions{})
	require.NoError(x.t, err)
}

// setRecordPhase writes the phase of StatefulSet revision name in its record.
func (x *followFixture) setRecordPhase(name string, phase v1alpha1.RevisionPhase) {
	crs := x.c.Kube.AppsV1().ControllerRevisions(followNS)
	cr, err := crs.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(x.t, err)
	cr.Annotations[v1alpha1.PhaseAnnotation] = string(phase)
	_, err = crs.Update(context.Background(), cr, metav1.UpdateOptions{})
	require.NoError(x.t, err)
}

// setPod creates (or moves) the StatefulSet's pod name, on the template with hash, Ready or not.
func (x *followFixture) setPod(name, hash string, ready bool) {
	p := testutil.ReadyPod(followNS, name, map[string]string{"app": "db", v1alpha1.ConfigLabel: "db",
		appsv1.ControllerRevisionHashLabelKey: hash}, time.Now())
	if !ready {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	pods := x.c.Kube.CoreV1().Pods(followNS)
	if _, err := pods.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		_, err = pods.Update(context.Background(), p, metav1.UpdateOptions{})
		require.NoError(x.t, err)
		return
	}
	_, err := pods.Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(x.t, err)
}

// Follow counts a StatefulSet revision's ready pods by its template hash, sees the walk
// progress, and ends when the revision's record says Complete.
func TestFollowStatefulSetRevision(t *testing.T) {
	x := newSTSFollowFixture(t)
	steps := []struct {
		name     string
		change   func()
		wantDone bool
		want     string
	}{
		{
			name: "db-2 moved, db-1 on revision 2's template but not Ready, db-0 on revision 1's",
			change: func() {
				x.setPod("db-0", stsHash1, true)
				x.setPod("db-1", stsHash2, false)
				x.setPod("db-2", stsHash2, true)
			},
			want: "Following revision db-2 (cause: unknown)\nrevision db-2: Running\nrevision db-2: 1 of 3 pods ready\n",
		},
		{
			name:   "db-1 Ready",
			change: func() { x.setPod("db-1", stsHash2, true) },
			want:   "revision db-2: 2 of 3 pods ready\n",
		},
		{
			name:   "db-0 moved and Ready",
			change: func() { x.setPod("db-0", stsHash2, true) },
			want:   "revision db-2: 3 of 3 pods ready\n",
		},
		{
			name:     "the controller records Complete",
			change:   func() { x.setRecordPhase("db-2", v1alpha1.RevisionPhaseComplete) },
			wantDone: true,
			want:     "revision db-2: Complete\nrevision db-2 is complete: 3 of 3 pods ready\n",
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := x.out.Len()
			step.change()
			done, err := x.f.step(context.Background())
			require.NoError(t, err)
			assert.Equal(t, step.wantDone, done)
			assert.Equal(t, step.want, x.out.String()[before:])
		})
	}
}

// A StatefulSet revision whose template hash is not recorded yet has no ready pod: a pod
// without the hash label is none of its pods.
func TestReadyPodsOfAStatefulSetRevision(t *testing.T) {
	tests := []struct {
		name string
		hash string
		pods map[string]string // pod name -> its controller-revision-hash
		want int32
	}{
		{name: "the pods of its hash", hash: stsHash2, pods: map[string]string{"db-0": stsHash1, "db-1": stsHash2, "db-2": stsHash2}, want: 2},
		{name: "no hash recorded yet", hash: "", pods: map[string]string{"db-0": stsHash1, "db-1": stsHash2, "db-2": ""}, want: 0},
		{name: "no pod on its template", hash: stsHash2, pods: map[string]string{"db-0": stsHash1}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := testutil.DeploymentConfig("db", "db:2", 3, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
			dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
			x := newFollowFixture(t, dc)
			x.createRecord(2, v1alpha1.RevisionPhaseRunning, tt.hash)
			for name, hash := range tt.pods {
				x.setPod(name, hash, true)
			}
			view, err := x.c.Get(context.Background(), "db")
			require.NoError(t, err)
			got, err := x.c.readyPods(context.Background(), view.Revision(2))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Follow watches what moves the revisions of each kind: a ReplicaSet DC's ReplicaSets, a
// StatefulSet DC's ControllerRevisions (by the records' selector) and its StatefulSet.
func TestFollowWatchesTheRevisionsOfEachKind(t *testing.T) {
	tests := []struct {
		name     string
		stateful bool
		want     map[string]string // resource -> label or field selector of its watch
	}{
		{name: "ReplicaSet DC", want: map[string]string{
			"deploymentconfigs": "metadata.name=db", "replicasets": "stagehand.dev/config=db",
			"pods": "stagehand.dev/config=db", "events": "involvedObject.name=db"}},
		{name: "StatefulSet DC", stateful: true, want: map[string]string{
			"deploymentconfigs": "metadata.name=db", "controllerrevisions": "stagehand.dev/config=db,stagehand.dev/workload=StatefulSet",
			"statefulsets": "metadata.name=db", "pods": "stagehand.dev/config=db", "events": "involvedObject.name=db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := testutil.DeploymentConfig("db", "db:2", 3, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
			if tt.stateful {
				dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
			}
			x := newFollowFixture(t, dc)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			x.c.watchChanges(ctx, "db")
			got := map[string]string{}
			for _, a := range append(x.c.Kube.(*kubefake.Clientset).Actions(), x.c.Stagehand.(*stagehandfake.Clientset).Actions()...) {
				if w, ok := a.(k8stesting.WatchActionImpl); ok {
					sel := w.WatchRestrictions.Labels.String()
					if sel == "" {
						sel = w.WatchRestrictions.Fields.String()
					}
					got[w.GetResource().Resource] = sel
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// Cancel's wait for a StatefulSet revision follows its ControllerRevision: it waits while
// the record says Running, and ends when it says Failed.
func TestWaitForAStatefulSetRevision(t *testing.T) {
	x := newSTSFollowFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seen []v1alpha1.RevisionPhase
	done := make(chan error, 1)
	go func() {
		done <- x.c.waitReplicaSet(ctx, "db-2", func(rs *appsv1.ReplicaSet) bool {
			if rs == nil {
				return true
			}
			seen = append(seen, revision.Phase(rs))
			return revision.Phase(rs).IsTerminal()
		})
	}()
	select {
	case err := <-done:
		t.Fatalf("the wait ended while the revision is Running: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	x.setRecordPhase("db-2", v1alpha1.RevisionPhaseFailed)
	require.NoError(t, <-done)
	require.NotEmpty(t, seen)
	assert.Equal(t, v1alpha1.RevisionPhaseRunning, seen[0], "the record's phase, read as its view")
	assert.Equal(t, v1alpha1.RevisionPhaseFailed, seen[len(seen)-1])
}
