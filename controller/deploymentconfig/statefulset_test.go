package deploymentconfig

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

func statefulConfig(latest int64) *v1alpha1.DeploymentConfig {
	dc := testutil.DeploymentConfig("db", "db:1", 3, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Namespace, dc.UID = "ns", types.UID("dc-uid")
	dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
	dc.Status.LatestVersion = latest
	v1alpha1.SetDefaults(dc)
	return dc
}

// statefulRecord is revision n of dc in phase, with its template hash, as the informer stores it.
func statefulRecord(t *testing.T, dc *v1alpha1.DeploymentConfig, n int64, phase v1alpha1.RevisionPhase, hash string) *appsv1.ReplicaSet {
	t.Helper()
	view := testutil.Revision(dc, n, 0, phase)
	view.UID = types.UID("rev-" + hash)
	if hash != "" {
		view.Annotations[v1alpha1.TemplateHashAnnotation] = hash
	}
	return view
}

// storedRecord puts the record of view into the fake apiserver, where the controller's
// writes go.
func storedRecord(t *testing.T, view *appsv1.ReplicaSet) *appsv1.ControllerRevision {
	t.Helper()
	cr, err := revision.ToControllerRevision(view)
	require.NoError(t, err)
	return cr
}

func TestSyncStatefulSetHoldsTheFirstRevisionsTemplate(t *testing.T) {
	dc := statefulConfig(1)
	one := statefulRecord(t, dc, 1, v1alpha1.RevisionPhasePending, "")
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, storedRecord(t, one))
	f.Cache(one)

	require.NoError(t, f.syncDC("db"))

	set, err := f.Kube.AppsV1().StatefulSets("ns").Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(t, err, "the first revision creates the StatefulSet")
	assert.Equal(t, int32(0), *set.Spec.Replicas, "the deployer scales it")
	assert.Equal(t, holdPartition, *set.Spec.UpdateStrategy.RollingUpdate.Partition, "no pod moves before the deployer says so")
	assert.Equal(t, "1", set.Annotations[v1alpha1.StatefulSetRevisionAnnotation])
	assert.NotContains(t, set.Spec.Template.Labels, v1alpha1.RevisionLabel)
	assert.True(t, metav1.IsControlledBy(set, dc))
	assert.Equal(t, "db", set.Spec.ServiceName)
	for _, a := range f.Actions() {
		assert.NotContains(t, a, "replicasets", "no ReplicaSet is written for a StatefulSet DC")
	}
}

func TestSyncStatefulSetRefusesAStatefulSetItDoesNotOwn(t *testing.T) {
	dc := statefulConfig(1)
	one := statefulRecord(t, dc, 1, v1alpha1.RevisionPhasePending, "")
	foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, storedRecord(t, one), foreign)
	f.Cache(one)
	f.Cache(foreign)

	err := f.syncDC("db")
	require.Error(t, err)
	assert.True(t, plumbing.IsFatal(err), "retrying cannot fix it: %v", err)
	assert.Contains(t, err.Error(), "kubectl stagehand adopt statefulset/db")
}

func TestSyncStatefulSetRollsBackAndDeletesOnlyTheStuckPods(t *testing.T) {
	dc := statefulConfig(2)
	one := statefulRecord(t, dc, 1, v1alpha1.RevisionPhaseComplete, "db-good")
	two := statefulRecord(t, dc, 2, v1alpha1.RevisionPhaseFailed, "db-bad")
	set := newStatefulSet(dc, two)
	set.UID, set.Generation = "set-uid", 4
	set.Spec.Replicas = ptrInt32(3)
	set.Status = appsv1.StatefulSetStatus{ObservedGeneration: 4, UpdateRevision: "db-bad", CurrentRevision: "db-good"}
	pod := func(name, hash string, ready bool) *corev1.Pod {
		p := testutil.ReadyPod("ns", name, map[string]string{"app": "db", v1alpha1.ConfigLabel: "db", appsv1.ControllerRevisionHashLabelKey: hash}, time.Now().Add(-time.Minute))
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		if !ready {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return p
	}
	objs := []runtime.Object{storedRecord(t, one), storedRecord(t, two), set,
		pod("db-0", "db-good", true), pod("db-1", "db-good", true), pod("db-2", "db-bad", false),
		deployerPod(t, two, corev1.PodFailed)}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, objs...)
	for _, o := range []runtime.Object{one, two, set, deployerPod(t, two, corev1.PodFailed)} {
		f.Cache(o)
	}

	// The first sync gives the StatefulSet revision 1's template back, and deletes nothing
	// while the StatefulSet controller has not seen it
	require.NoError(t, f.syncDC("db"))
	restored, err := f.Kube.AppsV1().StatefulSets("ns").Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", restored.Annotations[v1alpha1.StatefulSetRevisionAnnotation])
	assert.Equal(t, int32(0), *restored.Spec.UpdateStrategy.RollingUpdate.Partition)
	assert.Equal(t, one.Spec.Template, restored.Spec.Template)
	assert.Len(t, pods(t, f), 3)

	// Nor while the StatefulSet's status has not observed it: the stuck pod would come back
	// on the failed template
	restored.Generation = 5
	restored.Status = appsv1.StatefulSetStatus{ObservedGeneration: 4, UpdateRevision: "db-bad", CurrentRevision: "db-good"}
	f.Cache(restored)
	err = f.syncDC("db")
	assert.True(t, plumbing.IsRequeue(err), "it waits for the StatefulSet: %v", err)
	assert.Len(t, pods(t, f), 3)

	// Once the StatefulSet's status has observed it, the pod stuck on the failed template
	// goes, and only that one
	restored.Status = appsv1.StatefulSetStatus{ObservedGeneration: 5, UpdateRevision: "db-good", CurrentRevision: "db-good"}
	f.Cache(restored)
	err = f.syncDC("db")
	assert.True(t, plumbing.IsRequeue(err), "it looks again after a deletion: %v", err)
	assert.ElementsMatch(t, []string{"db-0", "db-1"}, pods(t, f))
}

func pods(t *testing.T, f *fixture) []string {
	t.Helper()
	list, err := f.Kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: "app=db"})
	require.NoError(t, err)
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func ptrInt32(n int32) *int32 { return &n }

// settledSet is a StatefulSet DC whose revision 1 completed on 3 pods and whose
// spec.replicas is now 1, with a BeforeScaleDown DeferPolicy selecting its pods when
// deferred is true.
func settledSet(t *testing.T, deferred bool, onFailure v1alpha1.OnFailure) (*fixture, *appsv1.StatefulSet) {
	t.Helper()
	dc := statefulConfig(1)
	dc.Spec.Replicas = ptrInt32(1)
	dc.Spec.Strategy.OnFailure = onFailure
	phase := v1alpha1.RevisionPhaseComplete
	if onFailure == v1alpha1.OnFailureFreeze {
		phase = v1alpha1.RevisionPhaseFailed
	}
	one := statefulRecord(t, dc, 1, phase, "db-good")
	set := newStatefulSet(dc, one)
	set.Spec.Replicas = ptrInt32(3)
	set.Spec.UpdateStrategy.RollingUpdate.Partition = ptrInt32(0)
	if onFailure == v1alpha1.OnFailureFreeze {
		v1alpha1.SetDeferScaleDownRequest(set, 1)
	}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, storedRecord(t, one), set, deployerPod(t, one, corev1.PodSucceeded))
	for _, o := range []runtime.Object{one, set, deployerPod(t, one, corev1.PodSucceeded)} {
		f.Cache(o)
	}
	policies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if deferred {
		require.NoError(t, policies.Add(&v1alpha1.DeferPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "hand-over", Namespace: "ns"},
			Spec: v1alpha1.DeferPolicySpec{When: v1alpha1.DeferBeforeScaleDown,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.ConfigLabel: "db"}}},
		}))
	}
	f.dc.deferLister = dclisters.NewDeferPolicyLister(policies)
	return f, set
}

// A scale-down of pods that a BeforeScaleDown policy selects is asked of the DeferPolicy
// controller, which lowers the replicas one ordinal at a time after each pod's steps;
// without such a policy the replicas go down at once.
func TestSyncStatefulSetDefersAScaleDownToTheBeforeScaleDownSteps(t *testing.T) {
	for _, deferred := range []bool{true, false} {
		f, _ := settledSet(t, deferred, v1alpha1.OnFailureRollback)
		require.NoError(t, f.syncDC("db"))
		set, err := f.Kube.AppsV1().StatefulSets("ns").Get(context.Background(), "db", metav1.GetOptions{})
		require.NoError(t, err)
		to, asked := v1alpha1.DeferScaleDownRequestOf(set)
		if deferred {
			assert.Equal(t, int32(3), *set.Spec.Replicas, "the DeferPolicy controller lowers them")
			assert.True(t, asked)
			assert.Equal(t, int32(1), to)
		} else {
			assert.Equal(t, int32(1), *set.Spec.Replicas)
			assert.False(t, asked)
		}
	}
}

// onFailure: Freeze leaves the replicas as they are: a request no pod was chosen for yet
// is withdrawn.
func TestSyncStatefulSetFrozenWithdrawsAnUnservedScaleDown(t *testing.T) {
	f, _ := settledSet(t, true, v1alpha1.OnFailureFreeze)
	require.NoError(t, f.syncDC("db"))
	set, err := f.Kube.AppsV1().StatefulSets("ns").Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, v1alpha1.HasDeferScaleDownRequest(set))
	assert.Equal(t, int32(3), *set.Spec.Replicas)
}
