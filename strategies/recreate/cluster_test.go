package recreate_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

const namespace = "test"

var (
	podsResource        = corev1.SchemeGroupVersion.WithResource("pods")
	podKind             = corev1.SchemeGroupVersion.WithKind("Pod")
	replicaSetsResource = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

// revision is revision n of the DeploymentConfig web: the ReplicaSet web-<n> with
// replicas, whose selector and pod labels carry the config and revision labels.
func revision(n int, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: strconv.Itoa(n)}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", n), Namespace: namespace, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
	}
}

// clusterOptions make the fake cluster misbehave.
type clusterOptions struct {
	// unready: new pods never become Ready.
	unready bool
	// stuck: new pods of this revision have waited a minute in CreateContainerConfigError.
	stuck string
	// stuckTerminating: pods of a revision scaled down stay, terminating, for ever.
	stuckTerminating bool
	// afterScale runs after each scale, with the log entry of the scale.
	afterScale func(entry string)
}

// cluster is a fake clientset whose ReplicaSet controller and kubelet act inside the
// scale subresource, synchronously: scaling a revision up creates its pods, Ready at once;
// scaling it down deletes them. The pod watch of the strategy sees every change. The
// cluster records each scale, and each hook that hooks() runs, in one log, so that a
// test can assert their order and what each hook saw.
type cluster struct {
	client *fake.Clientset
	opts   clusterOptions

	mu      sync.Mutex
	log     []string
	created int // names the pods
}

// newCluster returns a cluster that holds the revisions with their pods.
func newCluster(t *testing.T, opts clusterOptions, revisions ...*appsv1.ReplicaSet) *cluster {
	t.Helper()
	c := &cluster{client: fake.NewClientset(), opts: opts}
	for _, rs := range revisions {
		require.NoError(t, c.client.Tracker().Add(rs.DeepCopy()))
		require.NoError(t, c.reconcile(rs, strategies.Replicas(rs)))
	}
	c.client.PrependReactor("get", "replicasets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		get := action.(k8stesting.GetAction)
		if get.GetSubresource() != "scale" {
			return false, nil, nil
		}
		rs, err := c.replicaSet(get.GetName())
		if err != nil {
			return true, nil, err
		}
		return true, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: rs.Name, Namespace: rs.Namespace},
			Spec:       autoscalingv1.ScaleSpec{Replicas: strategies.Replicas(rs)},
		}, nil
	})
	c.client.PrependReactor("update", "replicasets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		update := action.(k8stesting.UpdateAction)
		if update.GetSubresource() != "scale" {
			return false, nil, nil
		}
		scale := update.GetObject().(*autoscalingv1.Scale)
		return true, scale, c.scale(scale.Name, scale.Spec.Replicas)
	})
	return c
}

// clients are the strategy's clients over the cluster.
func (c *cluster) clients() strategies.Clients {
	return &watchedClients{KubeClients: strategies.NewKubeClients(c.client, namespace)}
}

// watchedClients hold every scale back until the pod watch of the newest list is open.
// A real apiserver resumes a watch from the list's resourceVersion, so no event falls
// between the two; the fake clientset has no resourceVersions, and a pod deleted before
// the watch opens would never reach the tracker.
type watchedClients struct {
	*strategies.KubeClients
	mu             sync.Mutex
	lists, watches int
	opened         chan struct{}
}

func (w *watchedClients) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	w.mu.Lock()
	w.lists++
	w.mu.Unlock()
	return w.KubeClients.ListPods(ctx, opts)
}

func (w *watchedClients) WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := w.KubeClients.WatchPods(ctx, opts)
	w.mu.Lock()
	w.watches++
	if w.opened != nil && w.watches >= w.lists {
		close(w.opened)
		w.opened = nil
	}
	w.mu.Unlock()
	return wi, err
}

func (w *watchedClients) ScaleReplicaSet(ctx context.Context, name string, replicas int32) error {
	w.mu.Lock()
	var wait chan struct{}
	if w.lists > w.watches {
		if w.opened == nil {
			w.opened = make(chan struct{})
		}
		wait = w.opened
	}
	w.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return w.KubeClients.ScaleReplicaSet(ctx, name, replicas)
}

// replicaSet reads a revision from the tracker. Reactors run under the fake's lock, so
// they use the tracker, not the clientset.
func (c *cluster) replicaSet(name string) (*appsv1.ReplicaSet, error) {
	obj, err := c.client.Tracker().Get(replicaSetsResource, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*appsv1.ReplicaSet), nil
}

// scale sets the replicas of a revision and lets the controller and kubelet act.
func (c *cluster) scale(name string, replicas int32) error {
	rs, err := c.replicaSet(name)
	if err != nil {
		return err
	}
	rs = rs.DeepCopy()
	rs.Spec.Replicas = &replicas
	if err := c.client.Tracker().Update(replicaSetsResource, rs, namespace); err != nil {
		return err
	}
	if err := c.reconcile(rs, replicas); err != nil {
		return err
	}
	entry := c.record("scale %s to %d", name, replicas)
	if c.opts.afterScale != nil {
		c.opts.afterScale(entry)
	}
	return nil
}

// reconcile creates or removes pods of rs until it has replicas active pods.
func (c *cluster) reconcile(rs *appsv1.ReplicaSet, replicas int32) error {
	var active []*corev1.Pod
	for _, pod := range c.pods(rs.Name) {
		if pod.DeletionTimestamp == nil {
			active = append(active, pod)
		}
	}
	for i := int32(len(active)); i < replicas; i++ {
		if err := c.client.Tracker().Create(podsResource, c.newPod(rs), namespace); err != nil {
			return err
		}
	}
	for _, pod := range active[min(int(replicas), len(active)):] {
		var err error
		if c.opts.stuckTerminating {
			pod.DeletionTimestamp = &metav1.Time{Time: pod.CreationTimestamp.Time}
			err = c.client.Tracker().Update(podsResource, pod, namespace)
		} else {
			err = c.client.Tracker().Delete(podsResource, namespace, pod.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) newPod(rs *appsv1.ReplicaSet) *corev1.Pod {
	c.mu.Lock()
	c.created++
	name := fmt.Sprintf("%s-%d", rs.Name, c.created)
	c.mu.Unlock()
	controller := true
	if rs.Name == c.opts.stuck {
		pod := testutil.WaitingPod(namespace, name, rs.Spec.Template.Labels, podstatus.WaitingCreateContainerConfigError,
			"couldn't find key db in ConfigMap test/settings", time.Now().Add(-time.Minute))
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, Controller: &controller}}
		return pod
	}
	ready := corev1.ConditionTrue
	if c.opts.unready {
		ready = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, Controller: &controller}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
		},
	}
}

// pods are the pods that the revision named rs owns, terminating ones included.
func (c *cluster) pods(rs string) []*corev1.Pod {
	obj, err := c.client.Tracker().List(podsResource, podKind, namespace)
	if err != nil {
		panic(err) // the tracker lists pods of a namespace without fail
	}
	var pods []*corev1.Pod
	for i := range obj.(*corev1.PodList).Items {
		pod := &obj.(*corev1.PodList).Items[i]
		if owner := metav1.GetControllerOf(pod); owner != nil && owner.Name == rs {
			pods = append(pods, pod.DeepCopy())
		}
	}
	return pods
}

// summary describes the pods of every revision: "web-1 2/2, web-2 0/0" (Ready/all).
func (c *cluster) summary() string {
	obj, err := c.client.Tracker().List(replicaSetsResource, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), namespace)
	if err != nil {
		panic(err)
	}
	var parts []string
	for _, rs := range obj.(*appsv1.ReplicaSetList).Items {
		pods := c.pods(rs.Name)
		ready := 0
		for _, pod := range pods {
			if available, _ := strategies.PodAvailable(pod, 0, pod.CreationTimestamp.Time); available {
				ready++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", rs.Name, ready, len(pods)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// replicas is spec.replicas of every revision.
func (c *cluster) replicas() map[string]int32 {
	obj, err := c.client.Tracker().List(replicaSetsResource, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), namespace)
	if err != nil {
		panic(err)
	}
	out := map[string]int32{}
	for _, rs := range obj.(*appsv1.ReplicaSetList).Items {
		out[rs.Name] = strategies.Replicas(&rs)
	}
	return out
}

func (c *cluster) record(format string, args ...any) string {
	entry := fmt.Sprintf(format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, entry)
	return entry
}

// entries is the log so far.
func (c *cluster) entries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// hooks returns a strategies.HookRunner that records each hook with what it saw of the
// pods, and fails the stages of fail with their error. Like the hookpod runner, it
// returns ErrCancelled when ctx is done.
func (c *cluster) hooks(fail map[string]error) strategies.HookRunner {
	return hookRecorder{c: c, fail: fail}
}

type hookRecorder struct {
	c    *cluster
	fail map[string]error
}

func (h hookRecorder) Run(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error {
	name := "none"
	if hook != nil {
		name = strings.Join(hook.ExecNewPod.Command, " ")
	}
	h.c.record("%s hook (%s): pods %s", stage, name, h.c.summary())
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", strategies.ErrCancelled, err)
	}
	return h.fail[stage]
}

// hook is a lifecycle hook whose command is its name, e.g. run-pre.
func hook(name string) *v1alpha1.LifecycleHook {
	return &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort,
		ExecNewPod:    &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{name}},
	}
}
