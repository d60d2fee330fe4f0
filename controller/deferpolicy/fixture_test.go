package deferpolicy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	shfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// t0 is the fixture's clock. It has no sub-second part, so that the times a run records
// (RFC 3339, whole seconds) compare equal to it.
var t0 = time.Date(2030, time.March, 1, 12, 0, 0, 0, time.UTC)

// The pod most tests run the steps for.
const (
	podName = "db-0"
	podUID  = "0123abcd-4567-89ef-aaaa-bbbbccccdddd"
	nodeA   = "node-a"
)

// fixture is the DeferPolicy controller over fake clientsets, with informer caches that
// a test fills by hand, a fixed clock and a fake recorder. A test calls syncHandler
// through sync and looks at the clientsets' actions and objects.
type fixture struct {
	t      *testing.T
	kube   *k8sfake.Clientset
	sh     *shfake.Clientset
	c      *Controller
	events *record.FakeRecorder
	clock  time.Time

	pods, nodes, policies, rsets, sets cache.Indexer
}

// newFixture is a controller whose clientsets and caches hold objs.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	var kubeObjs, shObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*v1alpha1.DeferPolicy); ok {
			shObjs = append(shObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{t: t, kube: k8sfake.NewClientset(kubeObjs...), sh: shfake.NewSimpleClientset(shObjs...),
		events: record.NewFakeRecorder(100), clock: t0}
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	sf := stagehandinformers.NewSharedInformerFactory(f.sh, 0)
	pods, nodes := kf.Core().V1().Pods(), kf.Core().V1().Nodes()
	policies, rsets := sf.Stagehand().V1alpha1().DeferPolicies(), kf.Apps().V1().ReplicaSets()
	sets := kf.Apps().V1().StatefulSets()
	c, err := NewController(f.kube, f.sh, pods, nodes, policies, rsets, sets, Options{}, nil, logrus.NewEntry(logrus.New()))
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	c.recorder = f.events
	c.now = func() time.Time { return f.clock }
	f.c = c
	f.pods, f.nodes = pods.Informer().GetIndexer(), nodes.Informer().GetIndexer()
	f.policies, f.rsets = policies.Informer().GetIndexer(), rsets.Informer().GetIndexer()
	f.sets = sets.Informer().GetIndexer()
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

// cache puts obj into its informer's store, as if a watch had delivered it.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		err = f.pods.Update(o)
	case *corev1.Node:
		err = f.nodes.Update(o)
	case *v1alpha1.DeferPolicy:
		err = f.policies.Update(o)
	case *appsv1.ReplicaSet:
		err = f.rsets.Update(o)
	case *appsv1.StatefulSet:
		err = f.sets.Update(o)
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
	require.NoError(f.t, err)
}

// sync forgets the recorded actions and calls the sync handler with key.
func (f *fixture) sync(key string) error {
	f.kube.ClearActions()
	f.sh.ClearActions()
	return f.c.syncHandler(context.Background(), key)
}

// syncPod syncs the pod name and requires it to succeed.
func (f *fixture) syncPod(name string) {
	f.t.Helper()
	require.NoError(f.t, f.sync(kindPod+"/ns/"+name))
}

// pod reads a pod from the fake apiserver and puts it into the cache, as the watch would.
func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	f.cache(p)
	return p
}

// actions lists "verb resource name" of the kube client's writes since the last sync.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		name := ""
		switch x := a.(type) {
		case interface{ GetObject() runtime.Object }:
			if m, ok := x.GetObject().(metav1.Object); ok {
				name = m.GetName()
			}
		case interface{ GetName() string }:
			name = x.GetName()
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

// drainEvents is the events recorded so far, as "Type Reason message".
func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// eventWith is the first recorded event whose text contains reason, or "".
func eventWith(events []string, reason string) string {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return e
		}
	}
	return ""
}

// policyStatus reads a policy's status from the fake apiserver.
func (f *fixture) policyStatus(name string) v1alpha1.DeferPolicyStatus {
	f.t.Helper()
	p, err := f.sh.StagehandV1alpha1().DeferPolicies("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return p.Status
}

// runOf decodes pod's run record and requires one.
func runOf(t *testing.T, pod *corev1.Pod) *v1alpha1.DeferRun {
	t.Helper()
	run, err := v1alpha1.DeferRunOf(pod)
	require.NoError(t, err)
	require.NotNil(t, run, "pod %s has no run record", pod.Name)
	return run
}

// policy is a DeferPolicy of namespace ns selecting app=<app>, with one step per name
// and a grace period of 60 s.
func policy(name string, when v1alpha1.DeferWhen, app string, steps ...string) *v1alpha1.DeferPolicy {
	p := &v1alpha1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1alpha1.DeferPolicySpec{
			Selector:           &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			When:               when,
			GracePeriodSeconds: ptr.To[int64](60),
		},
	}
	for _, s := range steps {
		p.Spec.Steps = append(p.Spec.Steps, v1alpha1.DeferStep{Name: s, Image: "busybox", Command: []string{"sh", "-c", s}})
	}
	return p
}

// node is a Node, Ready or not since the given time.
func node(name string, ready bool, since time.Time) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

// runningPod is db-0 on node-a, labelled app=db, running, with the defer finalizer.
func runningPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName, Namespace: "ns", UID: podUID,
			Labels:     map[string]string{"app": "db", "tier": "data"},
			Finalizers: []string{"example.com/other", v1alpha1.DeferFinalizer},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeA,
			Containers: []corev1.Container{{Name: "db", Image: "postgres"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "db", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			},
		},
	}
}

// deleting is p deleted with the grace period.
func deleting(p *corev1.Pod, grace int64) *corev1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-time.Minute)}
	p.DeletionGracePeriodSeconds = ptr.To(grace)
	return p
}

// ended is p with its containers stopped and the given phase.
func ended(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Phase = phase
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	}
	return p
}

// withRun is p with run recorded on it.
func withRun(p *corev1.Pod, run *v1alpha1.DeferRun) *corev1.Pod {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1alpha1.DeferRunAnnotation] = run.Encode()
	p.Annotations[v1alpha1.DeferProgressAnnotation] = run.Progress()
	return p
}

// stepPod is a step's pod for db-0 in the given phase, as the controller created it.
func stepPod(t *testing.T, owner *corev1.Pod, p *v1alpha1.DeferPolicy, run *v1alpha1.DeferRun, phase corev1.PodPhase, exit int32) *corev1.Pod {
	t.Helper()
	sp, err := deferstep.Build(owner, run, p, deferstep.Name(owner, run.When, run.Current, run.Attempt), corev1.ResourceRequirements{})
	require.NoError(t, err)
	sp.UID = types.UID("uid-" + sp.Name)
	sp.Status.Phase = phase
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error"}}
	}
	sp.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha1.DeferStepContainer, State: state}}
	return sp
}

// inRun is the run of a two-step AfterTermination policy "cleanup", started 10 s before
// t0 with its deadline 50 s after, at step current, attempt 1.
func inRun(current int) *v1alpha1.DeferRun {
	return &v1alpha1.DeferRun{
		Policy: "cleanup", PolicyUID: "uid-cleanup", When: v1alpha1.DeferAfterTermination, Steps: 2,
		Started:  &metav1.Time{Time: t0.Add(-10 * time.Second)},
		Deadline: &metav1.Time{Time: t0.Add(50 * time.Second)},
		Current:  current, Attempt: 1,
	}
}
