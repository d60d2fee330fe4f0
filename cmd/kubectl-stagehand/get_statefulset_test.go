package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

// stsFixture is the StatefulSet DC db: revision 1 Complete, revision 2 Running, the
// StatefulSet holding revision 2's template, db-0 on revision 1's template, db-1 and
// db-2 on revision 2's, and revision 2's deployer pod.
type stsFixture struct {
	dc         *v1alpha1.DeploymentConfig
	rev1, rev2 *appsv1.ReplicaSet
	later      []*appsv1.ReplicaSet // revisions after 2
	set        *appsv1.StatefulSet
	pods       []*corev1.Pod
}

const (
	stsHash1 = "db-7f9c6d5b8"
	stsHash2 = "db-5d4c8b7f6"
)

func newSTSFixture() *stsFixture {
	dc := testutil.DeploymentConfig("db", "registry.example.com/db:2", 3, treeRolling())
	dc.Namespace, dc.UID, dc.CreationTimestamp = "shop", "db-uid", treeAgo(10*time.Minute)
	dc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
	dc.Status = v1alpha1.DeploymentConfigStatus{LatestVersion: 2, Phase: v1alpha1.RevisionPhaseRunning, Replicas: 3,
		ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 2}
	x := &stsFixture{dc: dc}
	x.rev1 = x.revision(1, v1alpha1.RevisionPhaseComplete, stsHash1, 10*time.Minute)
	x.rev1.Spec.Template.Spec.Containers[0].Image = "registry.example.com/db:1"
	x.rev2 = x.revision(2, v1alpha1.RevisionPhaseRunning, stsHash2, time.Minute)
	three, partition := int32(3), int32(1)
	x.set = &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Generation: 4, CreationTimestamp: treeAgo(10 * time.Minute),
			Labels:          map[string]string{v1alpha1.ConfigLabel: "db"},
			Annotations:     map[string]string{v1alpha1.StatefulSetRevisionAnnotation: "2"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dc, revision.ConfigKind)}},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, Selector: dc.Spec.Selector,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			CurrentReplicas: 1, UpdatedReplicas: 2, CurrentRevision: stsHash1, UpdateRevision: stsHash2},
	}
	x.pods = []*corev1.Pod{
		x.setPod("db-0", stsHash1, 10*time.Minute),
		x.setPod("db-1", stsHash2, 30*time.Second),
		x.setPod("db-2", stsHash2, 50*time.Second),
		x.deployerPod(x.rev2, corev1.PodRunning, time.Minute),
	}
	return x
}

// revision is revision n of the DC: the view of its ControllerRevision, with hash.
func (x *stsFixture) revision(n int64, phase v1alpha1.RevisionPhase, hash string, age time.Duration) *appsv1.ReplicaSet {
	rs := testutil.Revision(x.dc, n, 0, phase)
	rs.CreationTimestamp = treeAgo(age)
	rs.Annotations[v1alpha1.CauseAnnotation] = string(v1alpha1.DeploymentCauseConfigChange)
	if hash != "" {
		rs.Annotations[v1alpha1.TemplateHashAnnotation] = hash
	}
	return rs
}

// setPod is a Ready pod of the StatefulSet on the template with hash.
func (x *stsFixture) setPod(name, hash string, age time.Duration) *corev1.Pod {
	p := testutil.ReadyPod("shop", name, map[string]string{"app": "db", v1alpha1.ConfigLabel: "db",
		appsv1.ControllerRevisionHashLabelKey: hash}, treeNow.Add(-age))
	p.UID = types.UID(name)
	p.Spec.Containers = []corev1.Container{{Name: "app"}}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "set-uid",
		Controller: new(true)}}
	return p
}

// deployerPod is the deployer pod of revision rs, in phase.
func (x *stsFixture) deployerPod(rs *appsv1.ReplicaSet, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	name := v1alpha1.DeployerPodName(rs.Name)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name), CreationTimestamp: treeAgo(age),
			Labels: map[string]string{v1alpha1.ConfigLabel: "db", v1alpha1.RevisionLabel: rs.Labels[v1alpha1.RevisionLabel],
				v1alpha1.DeployerPodForLabel: rs.Name}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "deployer"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// objects are the fixture as the apiserver holds it: the revisions as ControllerRevisions.
func (x *stsFixture) objects(t *testing.T) []runtime.Object {
	t.Helper()
	objs := []runtime.Object{x.dc}
	for _, rs := range append([]*appsv1.ReplicaSet{x.rev1, x.rev2}, x.later...) {
		if rs == nil {
			continue
		}
		cr, err := revision.ToControllerRevision(rs)
		require.NoError(t, err)
		objs = append(objs, cr)
	}
	if x.set != nil {
		objs = append(objs, x.set)
	}
	for _, p := range x.pods {
		objs = append(objs, p)
	}
	return objs
}

// output runs `get` once on the fixture, without a terminal.
func (x *stsFixture) output(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	g := newTreeGetter(x.objects(t), &out)
	g.name = "db"
	require.NoError(t, g.once(context.Background()))
	return out.String()
}

func TestGetStatefulSetRolloutInProgress(t *testing.T) {
	got := newSTSFixture().output(t)

	assert.Equal(t, `Name:        db
Namespace:   shop
Status:      ◌ Running, revision 2
Strategy:    Rolling
Replicas:    3/3 ready, 2 updated, 3 available
Workload:    StatefulSet db
Triggers:    ConfigChange

NAME                 KIND              STATUS      AGE  INFO
db                   DeploymentConfig  ◌ Running   10m  ready 3/3
├── db               StatefulSet       ◌ Updating  10m  template of revision 2, ready 3/3, updated 2/3, partition 1
├── db-2             Revision 2        ◌ Running   60s  ConfigChange, registry.example.com/db:2, ready 2/2
│   ├── db-2-deploy  Deployer          ◌ Running   60s
│   ├── db-1         Pod               ✔ Running   30s  ready 1/1
│   └── db-2         Pod               ✔ Running   50s  ready 1/1
└── db-1             Revision 1        ✔ Complete  10m  ConfigChange, registry.example.com/db:1, ready 1/1, active
    └── db-0         Pod               ✔ Running   10m  ready 1/1
`, got)
}

// stsTreeTests are the variants of a StatefulSet DC's tree: each row changes the fixture
// and names the lines that must appear and the ones that must not.
var stsTreeTests = []struct {
	name    string
	change  func(x *stsFixture)
	want    []string
	notWant []string
}{
	{
		name:   "a revision whose template hash is not recorded yet: its pods are under the StatefulSet",
		change: func(x *stsFixture) { delete(x.rev2.Annotations, v1alpha1.TemplateHashAnnotation) },
		want: []string{
			"├── db               StatefulSet       ◌ Updating  10m  template of revision 2, ready 3/3, updated 2/3, partition 1, pods of no known revision: 2\n" +
				"│   ├── db-1         Pod               ✔ Running   30s  ready 1/1\n" +
				"│   └── db-2         Pod               ✔ Running   50s  ready 1/1\n" +
				"├── db-2             Revision 2        ◌ Running   60s  ConfigChange, registry.example.com/db:2, ready 0/0\n" +
				"│   └── db-2-deploy  Deployer          ◌ Running   60s\n",
		},
	},
	{
		name: "a pod of a template that adopt took over carries no config label: the selector finds it",
		change: func(x *stsFixture) {
			delete(x.pods[0].Labels, v1alpha1.ConfigLabel)
			x.rev1.Annotations[v1alpha1.AdoptedFromAnnotation] = "statefulset/db"
		},
		want: []string{"ready 1/1, adopted from statefulset/db, active\n    └── db-0         Pod"},
	},
	{
		name: "a pod that the selector selects and the StatefulSet does not control is not the DC's",
		change: func(x *stsFixture) {
			stray := testutil.ReadyPod("shop", "db-tool", map[string]string{"app": "db"}, treeNow)
			x.pods = append(x.pods, stray)
		},
		notWant: []string{"db-tool"},
	},
	{
		name: "a rollback records revision 3 with revision 1's template: its pods are the newest revision's",
		change: func(x *stsFixture) {
			x.dc.Status.LatestVersion = 3
			x.rev2.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseFailed)
			rev3 := x.revision(3, v1alpha1.RevisionPhaseComplete, stsHash1, 0)
			rev3.Spec.Template.Spec.Containers[0].Image = "registry.example.com/db:1"
			x.later = append(x.later, rev3)
			x.pods = append(x.pods[:3], x.deployerPod(rev3, corev1.PodSucceeded, 0))
		},
		want: []string{
			"├── db-3             Revision 3        ✔ Complete   0s   ConfigChange, registry.example.com/db:1, ready 1/1, active\n" +
				"│   ├── db-3-deploy  Deployer          ✔ Succeeded  0s\n" +
				"│   └── db-0         Pod               ✔ Running    10m  ready 1/1\n",
			"└── db-1             Revision 1        ○ Complete   10m  ConfigChange, registry.example.com/db:1, ready 0/0\n",
		},
	},
	{
		name: "maxSurge other than its default does not apply",
		change: func(x *stsFixture) {
			surge := intstr.FromInt32(1)
			x.dc.Spec.Strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{MaxSurge: &surge}
		},
		want: []string{"Workload:    StatefulSet db, maxSurge 1 ignored: a StatefulSet's pods keep their names, so there is no surge pod\n"},
	},
	{
		name: "the first revision, before its StatefulSet exists",
		change: func(x *stsFixture) {
			x.dc.Status.LatestVersion, x.rev2, x.set = 1, nil, nil
			x.rev1.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseNew)
			x.pods = []*corev1.Pod{x.deployerPod(x.rev1, corev1.PodPending, 0)}
		},
		want: []string{"Replicas:    0/3 ready, 0 updated, 0 available\n",
			"├── db               StatefulSet       ○ Not created  -\n└── db-1             Revision 1        ◌ New          10m"},
	},
	{
		name: "a StatefulSet of the same name that the DC does not control",
		change: func(x *stsFixture) {
			x.set.OwnerReferences = nil
		},
		want: []string{"├── db               StatefulSet       ⚠ Updating  10m  template of revision 2, ready 3/3, updated 2/3, partition 1, not controlled by deploymentconfig/db\n"},
	},
	{
		name: "all moved, the partition at 0 and revision 2 complete",
		change: func(x *stsFixture) {
			x.dc.Status.Phase = v1alpha1.RevisionPhaseComplete
			x.rev2.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseComplete)
			x.pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] = stsHash2
			zero := int32(0)
			x.set.Spec.UpdateStrategy.RollingUpdate.Partition = &zero
			x.set.Status.UpdatedReplicas, x.set.Status.CurrentRevision = 3, stsHash2
			x.pods[3].Status.Phase = corev1.PodSucceeded
		},
		want: []string{
			"Status:      ✔ Complete, revision 2\n",
			"Replicas:    3/3 ready, 3 updated, 3 available\n",
			"├── db               StatefulSet       ✔ Ready      10m  template of revision 2, ready 3/3, updated 3/3\n" +
				"├── db-2             Revision 2        ✔ Complete   60s  ConfigChange, registry.example.com/db:2, ready 3/3, active\n" +
				"│   ├── db-2-deploy  Deployer          ✔ Succeeded  60s\n" +
				"│   ├── db-0         Pod               ✔ Running    10m  ready 1/1\n" +
				"│   ├── db-1         Pod               ✔ Running    30s  ready 1/1\n" +
				"│   └── db-2         Pod               ✔ Running    50s  ready 1/1\n" +
				"└── db-1             Revision 1        ○ Complete   10m  ConfigChange, registry.example.com/db:1, ready 0/0\n",
		},
	},
}

func TestGetStatefulSetTree(t *testing.T) {
	for _, tt := range stsTreeTests {
		t.Run(tt.name, func(t *testing.T) {
			x := newSTSFixture()
			tt.change(x)
			got := x.output(t)
			for _, want := range tt.want {
				assert.Contains(t, got, want)
			}
			for _, not := range tt.notWant {
				assert.NotContains(t, got, not)
			}
			assert.True(t, strings.HasSuffix(got, "\n"), "the tree ends with a line end")
		})
	}
}

// --watch of a StatefulSet DC watches its ControllerRevisions, its StatefulSet and its
// pods (no ReplicaSets): a pod that moves to revision 2's template moves in the tree, and
// --until-complete ends when revision 2's record says Complete.
func TestGetWatchStatefulSetUntilComplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x := newSTSFixture()
	out := &syncBuffer{}
	g := newTreeGetter(x.objects(t), nil)
	g.name, g.out = "db", out
	done := make(chan error, 1)
	go func() { done <- g.watch(ctx, true) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "db-0") }, 10*time.Second, 10*time.Millisecond)

	// When db-0 moves to revision 2's template and revision 2 completes
	db0 := x.pods[0].DeepCopy()
	db0.Labels[appsv1.ControllerRevisionHashLabelKey] = stsHash2
	_, err := g.kube.CoreV1().Pods("shop").Update(ctx, db0, metav1.UpdateOptions{})
	require.NoError(t, err)
	set := x.set.DeepCopy()
	set.Status.UpdatedReplicas, set.Status.CurrentRevision = 3, stsHash2
	_, err = g.kube.AppsV1().StatefulSets("shop").UpdateStatus(ctx, set, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "updated 3/3") }, 10*time.Second, 10*time.Millisecond)
	x.rev2.Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseComplete)
	cr, err := revision.ToControllerRevision(x.rev2)
	require.NoError(t, err)
	_, err = g.kube.AppsV1().ControllerRevisions("shop").Update(ctx, cr, metav1.UpdateOptions{})
	require.NoError(t, err)
	x.dc.Status.Phase = v1alpha1.RevisionPhaseComplete
	_, err = g.stagehand.StagehandV1alpha1().DeploymentConfigs("shop").UpdateStatus(ctx, x.dc, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Then the watch ends with success, and its last tree has every pod under revision 2
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the watch did not end when revision 2 completed")
	}
	text := out.String()
	last := text[strings.LastIndex(text, "--- "):]
	assert.Contains(t, last, "├── db-2             Revision 2        ✔ Complete  60s  ConfigChange, registry.example.com/db:2, ready 3/3, active\n"+
		"│   ├── db-2-deploy  Deployer          ◌ Running   60s\n"+
		"│   ├── db-0         Pod               ✔ Running   10m  ready 1/1\n", "the last tree:\n%s", last)
	var watched []string
	for _, a := range g.kube.(*kubefake.Clientset).Actions() {
		if a.GetVerb() == "watch" {
			watched = append(watched, a.GetResource().Resource)
		}
	}
	assert.ElementsMatch(t, []string{"controllerrevisions", "statefulsets", "pods", "pods"}, watched,
		"the revisions' records, the StatefulSet, and the pods by config label and by selector")
}
