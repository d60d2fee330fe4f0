package deferpolicy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// webSet is StatefulSet web, settled at 3 replicas and asked to go down to 1; its pods
// web-0, web-1 and web-2 run and are ready.
func webSet() (*appsv1.StatefulSet, []runtime.Object) {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: 2,
			Annotations: map[string]string{v1alpha1.DeferScaleDownToAnnotation: "1", "keep": "me"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
		},
		Status: appsv1.StatefulSetStatus{Replicas: 3, ObservedGeneration: 2},
	}
	objs := []runtime.Object{set}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web",
					UID: "uid-web", Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{NodeName: nodeA, Containers: []corev1.Container{{Name: "web"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return set, objs
}

func (f *fixture) syncSet() {
	f.t.Helper()
	require.NoError(f.t, f.sync(kindSet+"/ns/web"))
}

// set reads StatefulSet web from the clientset into the cache, as its status had
// observed the write (the fake apiserver keeps the generation).
func (f *fixture) set() *appsv1.StatefulSet {
	f.t.Helper()
	set, err := f.kube.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(f.t, err)
	f.cache(set)
	return set
}

// endRun ends pod name's BeforeScaleDown run, as its steps' end would.
func (f *fixture) endRun(name string) {
	f.t.Helper()
	p := f.pod(name)
	run := runOf(f.t, p)
	run.Outcome = v1alpha1.DeferCompleted
	f.cache(withRun(p, run))
}

// A scale from 3 to 1 goes one ordinal at a time, highest first: web-2 is chosen, marked
// and runs its steps while the replicas stay 3; then the replicas go to 2, and web-1 does
// the same; then to 1, and the request is met. web-0 is never touched.
func TestStatefulScaleDownRunsTheHighestOrdinalsOneAtATime(t *testing.T) {
	_, objs := webSet()
	f := newFixture(t, append(objs, drain(), cleanup())...)

	for _, step := range []struct {
		pod  string
		left int32
	}{{"web-2", 2}, {"web-1", 1}} {
		f.syncSet()
		assert.Equal(t, []string{"update statefulsets web"}, f.actions(), "%s: the choice first", step.pod)
		assert.Equal(t, fmt.Sprintf("%d:%s", step.left, step.pod), f.set().Annotations[v1alpha1.DeferScaleDownChoiceAnnotation])

		f.syncSet()
		assert.Equal(t, []string{"update pods " + step.pod}, f.actions())
		p := f.pod(step.pod)
		assert.Equal(t, fmt.Sprintf("web/%d", step.left), p.Annotations[v1alpha1.DeferScaleDownAnnotation])
		assert.Equal(t, v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeScaleDown, Steps: 1}, *runOf(t, p))
		assert.Equal(t, []string{"Normal DeferStarted Chosen for the scale-down of StatefulSet web: DeferPolicy drain runs 1 steps first, within 60s"}, f.drainEvents())

		f.syncSet()
		assert.Empty(t, f.actions(), "%s's steps run: the replicas stay", step.pod)
		assert.Equal(t, step.left+1, *f.set().Spec.Replicas)

		f.endRun(step.pod)
		f.syncSet()
		assert.Equal(t, []string{"update statefulsets web"}, f.actions())
		got := f.set()
		assert.Equal(t, step.left, *got.Spec.Replicas)
		assert.NotContains(t, got.Annotations, v1alpha1.DeferScaleDownChoiceAnnotation)
	}
	assert.Equal(t, map[string]string{"keep": "me"}, f.set().Annotations, "the request is met and dropped")
	assert.Empty(t, f.pod("web-0").Annotations, "the pod that stays is not touched")
}

// A StatefulSet whose status has not observed its last change chooses nothing yet.
func TestStatefulScaleDownWaitsForTheStatefulSetToObserveItsSpec(t *testing.T) {
	set, objs := webSet()
	set.Status.ObservedGeneration = 1
	f := newFixture(t, append(objs, drain())...)
	f.syncSet()
	assert.Empty(t, f.actions())
}

// Without a policy that selects its pods, the StatefulSet goes to the request at once.
func TestStatefulScaleDownWithoutAPolicyScalesAtOnce(t *testing.T) {
	_, objs := webSet()
	f := newFixture(t, append(objs, cleanup())...)
	f.syncSet()
	assert.Equal(t, []string{"update statefulsets web"}, f.actions())
	got := f.set()
	assert.Equal(t, int32(1), *got.Spec.Replicas)
	assert.Equal(t, map[string]string{"keep": "me"}, got.Annotations)
}

// A withdrawn request still carries out the choice: web-2's steps ran, so it goes.
func TestStatefulScaleDownAWithdrawnRequestStillRemovesTheChosenPod(t *testing.T) {
	set, objs := webSet()
	delete(set.Annotations, v1alpha1.DeferScaleDownToAnnotation)
	set.Annotations[v1alpha1.DeferScaleDownChoiceAnnotation] = "2:web-2"
	f := newFixture(t, append(objs, drain())...)
	f.syncSet()
	assert.Equal(t, []string{"update pods web-2"}, f.actions())
	f.endRun("web-2")
	f.syncSet()
	got := f.set()
	assert.Equal(t, int32(2), *got.Spec.Replicas)
	assert.Equal(t, map[string]string{"keep": "me"}, got.Annotations)
}

// When the replicas move under a choice (a scale-up meanwhile), the chosen pod, whose
// steps ran, is deleted so that it comes back new; a pod not marked yet is left alone.
func TestStatefulScaleDownAScaleUpUnderTheChoiceReplacesTheMarkedPod(t *testing.T) {
	for _, marked := range []bool{true, false} {
		t.Run(fmt.Sprintf("marked=%v", marked), func(t *testing.T) {
			set, objs := webSet()
			set.Spec.Replicas = ptr.To[int32](4)
			delete(set.Annotations, v1alpha1.DeferScaleDownToAnnotation)
			set.Annotations[v1alpha1.DeferScaleDownChoiceAnnotation] = "2:web-2"
			if marked {
				objs[3].(*corev1.Pod).Annotations = map[string]string{v1alpha1.DeferScaleDownAnnotation: "web/2"}
			}
			f := newFixture(t, objs...)
			f.syncSet()
			want := []string{"update statefulsets web"}
			if marked {
				want = append([]string{"delete pods web-2"}, want...)
			}
			assert.Equal(t, want, f.actions())
			got := f.set()
			assert.Equal(t, int32(4), *got.Spec.Replicas)
			assert.Equal(t, map[string]string{"keep": "me"}, got.Annotations)
		})
	}
}
