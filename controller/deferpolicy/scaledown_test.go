package deferpolicy

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestRankForRemovalOrdersPodsAsTheReplicaSetControllerRemovesThem(t *testing.T) {
	// base is scheduled, Running, ready, of deletion cost 0, created at t0.
	base := func(name string, mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)},
			Spec:       corev1.PodSpec{NodeName: nodeA},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	unscheduled := func(p *corev1.Pod) { p.Spec.NodeName = "" }
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	unknown := func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }
	notReady := func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
	cost := func(c int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1alpha1.PodDeletionCostAnnotation: strconv.Itoa(c)}
		}
	}
	newer := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute)) }
	both := func(a, b func(*corev1.Pod)) func(*corev1.Pod) { return func(p *corev1.Pod) { a(p); b(p) } }

	for _, tc := range []struct {
		name        string
		first, then func(*corev1.Pod) // the pod removed first, and the other
	}{
		{"unscheduled before scheduled", unscheduled, nil},
		{"Pending before Running", pending, nil},
		{"Pending before Unknown", pending, unknown},
		{"Unknown before Running", unknown, nil},
		{"not ready before ready", notReady, nil},
		{"lower deletion cost first", cost(-5), nil},
		{"no deletion cost is 0", nil, cost(10)},
		{"the lowest cost of all first", cost(chosenCost), cost(-1)},
		{"newer first", newer, nil},
		{"unscheduled before scheduled, both Pending", both(unscheduled, pending), pending},
		{"scheduling wins over the phase", unscheduled, pending},
		{"the phase wins over readiness", pending, notReady},
		{"readiness wins over the cost", notReady, cost(-100)},
		{"the cost wins over the age", cost(-1), newer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{"first", "then"}, {"then", "first"}} {
				muts := map[string]func(*corev1.Pod){"first": tc.first, "then": tc.then}
				pods := []*corev1.Pod{base(order[0], muts[order[0]]), base(order[1], muts[order[1]])}
				rankForRemoval(pods)
				assert.Equal(t, []string{"first", "then"}, []string{pods[0].Name, pods[1].Name}, "from %v", order)
			}
		})
	}
}

// webRS is revision web-1, settled at 3 replicas, asked to go down to 1; its pods are
// web-a (oldest), web-b and web-c (newest), all running and ready on node-a.
func webRS() (*appsv1.ReplicaSet, []*corev1.Pod) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "uid-web-1", Generation: 2,
			Annotations: map[string]string{v1alpha1.DeferScaleDownToAnnotation: "1", "keep": "me"}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "rev": "1"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "rev": "1"}}},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: 3, ObservedGeneration: 2},
	}
	var pods []*corev1.Pod
	for i, name := range []string{"web-a", "web-b", "web-c"} {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
				Labels:            map[string]string{"app": "web", "rev": "1"},
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute)),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1",
					UID: "uid-web-1", Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{NodeName: nodeA, Containers: []corev1.Container{{Name: "web"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return rs, pods
}

func drain() *v1alpha1.DeferPolicy {
	return policy("drain", v1alpha1.DeferBeforeScaleDown, "web", "deregister")
}

func scaleDownFixture(t *testing.T, rs *appsv1.ReplicaSet, pods []*corev1.Pod, more ...runtime.Object) *fixture {
	objs := []runtime.Object{rs}
	for _, p := range pods {
		objs = append(objs, p)
	}
	return newFixture(t, append(objs, more...)...)
}

func (f *fixture) syncRS(name string) {
	f.t.Helper()
	require.NoError(f.t, f.sync(kindRS+"/ns/"+name))
}

func (f *fixture) rs(name string) *appsv1.ReplicaSet {
	f.t.Helper()
	rs, err := f.kube.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	f.cache(rs)
	return rs
}

// A deferred scale-down records its choice on the ReplicaSet, then marks the chosen pods,
// lets their steps run, lowers the replicas once every chosen pod's run has ended, and
// ends once the chosen pods are gone.
func TestScaleDownChoosesThePodsThenScalesWhenTheirRunsEnd(t *testing.T) {
	rs, pods := webRS()
	f := scaleDownFixture(t, rs, pods, drain(), cleanup())

	f.syncRS("web-1")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions(), "the choice first, no pod yet")
	assert.Equal(t, "1:web-c,web-b", f.rs("web-1").Annotations[v1alpha1.DeferScaleDownChoiceAnnotation], "the two newest")

	f.syncRS("web-1")
	assert.ElementsMatch(t, []string{"update pods web-c", "update pods web-b"}, f.actions())
	for _, name := range []string{"web-b", "web-c"} {
		p := f.pod(name)
		assert.Equal(t, "-2147483648", p.Annotations[v1alpha1.PodDeletionCostAnnotation], name)
		assert.Equal(t, "web-1/1", p.Annotations[v1alpha1.DeferScaleDownAnnotation], name)
		run := runOf(t, p)
		assert.Equal(t, v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1}, *run, name)
		assert.Equal(t, "0/1", p.Annotations[v1alpha1.DeferProgressAnnotation], name)
	}
	assert.Empty(t, f.pod("web-a").Annotations, "the pod that stays is not touched")
	assert.Len(t, f.drainEvents(), 2, "a DeferStarted event for each chosen pod")

	// The chosen pods' steps run: the replicas stay.
	f.syncRS("web-1")
	assert.Empty(t, f.actions())

	b := f.pod("web-b")
	run := runOf(t, b)
	run.Outcome = v1alpha1.DeferCompleted
	f.cache(withRun(b, run))
	f.syncRS("web-1")
	assert.Empty(t, f.actions(), "web-c's run has not ended")

	c := f.pod("web-c")
	run = runOf(t, c)
	run.Outcome = v1alpha1.DeferFailed
	f.cache(withRun(c, run))
	f.syncRS("web-1")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions())
	got := f.rs("web-1")
	assert.Equal(t, int32(1), *got.Spec.Replicas)
	assert.Equal(t, map[string]string{"keep": "me", v1alpha1.DeferScaleDownRemovingAnnotation: "web-c,web-b"}, got.Annotations,
		"the request and the choice are dropped; the chosen pods are being removed")

	// The ReplicaSet controller removes the two chosen pods; the scale-down ends.
	f.syncRS("web-1")
	assert.Empty(t, f.actions(), "the ReplicaSet controller has not caught up")
	got.Status.Replicas = 1
	f.cache(got)
	f.cache(deleting(f.pod("web-b"), 30))
	f.cache(deleting(f.pod("web-c"), 30))
	f.syncRS("web-1")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions())
	assert.Equal(t, map[string]string{"keep": "me"}, f.rs("web-1").Annotations)
}

// The cause of issue 22 item 3: a sync that runs before the informer has delivered every
// chosen pod's mark saw fewer chosen pods than it needed and chose again from the rest,
// so that three pods ran their steps for a scale-down of two. The choice recorded on the
// ReplicaSet is what counts now, not the marks in the cache.
func TestScaleDownAStaleCacheDoesNotChooseAThirdPod(t *testing.T) {
	rs, pods := webRS()
	rs.Annotations[v1alpha1.DeferScaleDownChoiceAnnotation] = "1:web-c,web-b"
	run := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1}
	pods[2] = withRun(pods[2], run)
	pods[2].Annotations[v1alpha1.DeferScaleDownAnnotation] = "web-1/1"
	pods[2].Annotations[v1alpha1.PodDeletionCostAnnotation] = strconv.Itoa(chosenCost)
	// web-b's mark has not reached the cache; web-a now ranks before it.
	pods[0].Annotations = map[string]string{v1alpha1.PodDeletionCostAnnotation: "-100"}
	f := scaleDownFixture(t, rs, pods, drain())

	f.syncRS("web-1")
	assert.Equal(t, []string{"update pods web-b"}, f.actions(), "only the recorded pod that lacks its mark")
	assert.NotContains(t, f.pod("web-a").Annotations, v1alpha1.DeferScaleDownAnnotation)
}

// Two syncs that both read a ReplicaSet without a choice cannot both choose: the second
// write carries a stale resourceVersion and conflicts.
func TestScaleDownChoiceIsGuardedByTheResourceVersion(t *testing.T) {
	rs, pods := webRS()
	rs.ResourceVersion = "7"
	f := scaleDownFixture(t, rs, pods, drain())
	f.kube.PrependReactor("update", "replicasets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		got := action.(k8stesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		assert.Equal(t, "7", got.ResourceVersion, "the choice is written over the version it was made from")
		return true, nil, apierrors.NewConflict(appsv1.Resource("replicasets"), got.Name, nil)
	})
	err := f.sync(kindRS + "/ns/web-1")
	require.Error(t, err, "a conflict reads the ReplicaSet again")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions(), "no pod is marked before the choice is recorded")
}

// A pod that turned not ready after the choice would be removed before a chosen one: it
// is chosen too and runs its steps, and the chosen pod the ReplicaSet controller keeps is
// deleted afterwards.
func TestScaleDownChoosesAPodThatWouldGoFirst(t *testing.T) {
	rs, pods := webRS()
	rs.Annotations[v1alpha1.DeferScaleDownToAnnotation] = "2"
	rs.Annotations[v1alpha1.DeferScaleDownChoiceAnnotation] = "2:web-c"
	run := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1, Outcome: v1alpha1.DeferCompleted}
	pods[2] = withRun(pods[2], run)
	pods[2].Annotations[v1alpha1.DeferScaleDownAnnotation] = "web-1/2"
	pods[2].Annotations[v1alpha1.PodDeletionCostAnnotation] = strconv.Itoa(chosenCost)
	pods[0].Status.Conditions[0].Status = corev1.ConditionFalse
	f := scaleDownFixture(t, rs, pods, drain())

	f.syncRS("web-1")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions())
	assert.Equal(t, "2:web-c,web-a", f.rs("web-1").Annotations[v1alpha1.DeferScaleDownChoiceAnnotation])
	f.syncRS("web-1")
	assert.Equal(t, []string{"update pods web-a"}, f.actions(), "web-a's steps run")
	a := f.pod("web-a")
	run = runOf(t, a)
	run.Outcome = v1alpha1.DeferCompleted
	f.cache(withRun(a, run))
	f.syncRS("web-1")
	got := f.rs("web-1")
	assert.Equal(t, int32(2), *got.Spec.Replicas)
	assert.Equal(t, "web-c,web-a", got.Annotations[v1alpha1.DeferScaleDownRemovingAnnotation])

	// The ReplicaSet controller removed web-a; web-c, whose steps ran, is deleted.
	got.Status.Replicas = 2
	f.cache(got)
	f.cache(deleting(a, 30))
	err := f.sync(kindRS + "/ns/web-1")
	require.Error(t, err, "requeued until the deletion reaches the cache")
	assert.Equal(t, []string{"delete pods web-c"}, f.actions())
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferScaleDownRemoved), "web-1")
}

// A request withdrawn after the choice (the DC scaled back up) still removes the chosen
// pods once their steps have run: the ReplicaSet controller replaces them.
func TestScaleDownAWithdrawnRequestStillRemovesTheChosenPods(t *testing.T) {
	rs, pods := webRS()
	delete(rs.Annotations, v1alpha1.DeferScaleDownToAnnotation)
	rs.Annotations[v1alpha1.DeferScaleDownChoiceAnnotation] = "2:web-c"
	run := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1, Outcome: v1alpha1.DeferCompleted}
	pods[2] = withRun(pods[2], run)
	pods[2].Annotations[v1alpha1.DeferScaleDownAnnotation] = "web-1/2"
	f := scaleDownFixture(t, rs, pods, drain())

	f.syncRS("web-1")
	got := f.rs("web-1")
	assert.Equal(t, int32(3), *got.Spec.Replicas, "unchanged")
	assert.Equal(t, "web-c", got.Annotations[v1alpha1.DeferScaleDownRemovingAnnotation])
	require.Error(t, f.sync(kindRS+"/ns/web-1"), "requeued until the deletion reaches the cache")
	assert.Equal(t, []string{"delete pods web-c"}, f.actions())
}

func TestScaleDownWithoutAPolicyScalesAtOnce(t *testing.T) {
	rs, pods := webRS()
	rs.Status.Replicas = 4 // unsettled does not matter without a policy
	f := scaleDownFixture(t, rs, pods, cleanup(), policy("other", v1alpha1.DeferBeforeScaleDown, "db", "x"))

	f.syncRS("web-1")
	assert.Equal(t, []string{"update replicasets web-1"}, f.actions(), "no pod is marked")
	got := f.rs("web-1")
	assert.Equal(t, int32(1), *got.Spec.Replicas)
	assert.NotContains(t, got.Annotations, v1alpha1.DeferScaleDownToAnnotation)
}

func TestScaleDownWaitsForTheReplicaSetToSettle(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*appsv1.ReplicaSet)
	}{
		{"status.replicas is not spec.replicas", func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = 4 }},
		{"the generation is not observed", func(rs *appsv1.ReplicaSet) { rs.Status.ObservedGeneration = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, pods := webRS()
			tc.mut(rs)
			f := scaleDownFixture(t, rs, pods, drain())
			f.syncRS("web-1")
			assert.Empty(t, f.actions())
		})
	}
}

func TestScaleDownRequestsThatLowerNothingAreDropped(t *testing.T) {
	for _, to := range []string{"3", "5", "-1", "many"} {
		t.Run(to, func(t *testing.T) {
			rs, pods := webRS()
			rs.Annotations[v1alpha1.DeferScaleDownToAnnotation] = to
			f := scaleDownFixture(t, rs, pods, drain())
			f.syncRS("web-1")
			assert.Equal(t, []string{"update replicasets web-1"}, f.actions())
			got := f.rs("web-1")
			assert.Equal(t, int32(3), *got.Spec.Replicas, "unchanged")
			assert.NotContains(t, got.Annotations, v1alpha1.DeferScaleDownToAnnotation)
		})
	}
}

func TestScaleDownIgnoresReplicaSetsWithoutARequest(t *testing.T) {
	rs, pods := webRS()
	delete(rs.Annotations, v1alpha1.DeferScaleDownToAnnotation)
	f := scaleDownFixture(t, rs, pods, drain())
	f.syncRS("web-1")
	f.syncRS("gone")
	assert.Empty(t, f.actions())
}

// A pod chosen for an earlier request that the ReplicaSet controller kept counts for
// nothing: this request chooses again, and the earlier pod, now the cheapest, first.
func TestScaleDownChoosesAgainForANewRequest(t *testing.T) {
	rs, pods := webRS()
	pods[0].Annotations = map[string]string{
		v1alpha1.DeferScaleDownAnnotation:  "web-1/2",
		v1alpha1.PodDeletionCostAnnotation: strconv.Itoa(chosenCost),
	}
	f := scaleDownFixture(t, rs, pods, drain())

	f.syncRS("web-1")
	assert.Equal(t, "1:web-a,web-c", f.rs("web-1").Annotations[v1alpha1.DeferScaleDownChoiceAnnotation])
	f.syncRS("web-1")
	assert.ElementsMatch(t, []string{"update pods web-a", "update pods web-c"}, f.actions())
	assert.Equal(t, "web-1/1", f.pod("web-a").Annotations[v1alpha1.DeferScaleDownAnnotation])
}

// Pods that are being deleted or that another owner controls are not the ReplicaSet's to
// choose.
func TestScaleDownChoosesOnlyLivePodsTheReplicaSetControls(t *testing.T) {
	rs, pods := webRS()
	pods[2].DeletionTimestamp = &metav1.Time{Time: t0}
	pods[2].Finalizers = []string{"x"}
	pods[1].OwnerReferences[0].UID = "uid-web-1-old"
	rs.Annotations[v1alpha1.DeferScaleDownToAnnotation] = "2"
	f := scaleDownFixture(t, rs, pods, drain())

	f.syncRS("web-1")
	assert.Equal(t, "2:web-a", f.rs("web-1").Annotations[v1alpha1.DeferScaleDownChoiceAnnotation])
}
