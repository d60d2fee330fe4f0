package deferpolicy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// evictionFixture is the fixture with the EvictionRequest informers wired, a pod that
// names Stagehand, a BeforeEviction policy selecting it, and one request made at t0.
func evictionFixture(t *testing.T) (*fixture, cache.Indexer, cache.Indexer) {
	pod := runningPod()
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: v1alpha1.EvictionResponderName, Priority: ptr.To[int32](20000)}}
	req := request("drain-db-0", "drain.example/a", lifecyclev1alpha1.EvictionRequestIntentEviction, t0)
	f := newFixture(t, pod, policy("drain", v1alpha1.DeferBeforeEviction, "db", "handover"))
	_, err := f.kube.LifecycleV1alpha1().EvictionRequests("ns").Create(context.Background(), req, metav1.CreateOptions{})
	require.NoError(t, err)
	lf := informers.NewSharedInformerFactory(f.kube, 0)
	requests, evictions := lf.Lifecycle().V1alpha1().EvictionRequests(), lf.Lifecycle().V1alpha1().Evictions()
	require.NoError(t, f.c.WithEvictions(requests, evictions))
	require.NoError(t, requests.Informer().GetIndexer().Add(req))
	return f, requests.Informer().GetIndexer(), evictions.Informer().GetIndexer()
}

// The driver leaves an evictionrequest-controller 5 s to create the Eviction, then creates
// it and starts it: Stagehand Active, the evictor last. One it created without a status
// (a restart between the two writes) gets its status.
func TestTheDriverCreatesAndStartsTheEviction(t *testing.T) {
	f, _, evictions := evictionFixture(t)
	f.clock = t0.Add(2 * time.Second)
	err := f.sync("evict/ns/" + podName)
	require.Error(t, err, "a requeue: the wait for a controller")
	assert.Empty(t, f.actions())

	f.clock = t0.Add(6 * time.Second)
	require.NoError(t, f.sync("evict/ns/"+podName))
	assert.Equal(t, []string{"create evictions " + podName + "-0123abcd", "update evictions " + podName + "-0123abcd"}, f.actions())
	ev, err := f.kube.LifecycleV1alpha1().Evictions("ns").Get(context.Background(), podName+"-0123abcd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", ev.Labels[v1alpha1.EvictionDriverLabel])
	assert.Equal(t, []string{"stagehand.dev/defer=Active", "imperative-eviction.k8s.io/evictor=Inactive"}, names(&ev.Status))

	bare := ev.DeepCopy()
	bare.Status = lifecyclev1alpha1.EvictionStatus{}
	require.NoError(t, evictions.Add(bare))
	require.NoError(t, f.sync("evict/ns/"+podName))
	assert.Equal(t, []string{"update evictions " + podName + "-0123abcd"}, f.actions(), "the status it lacked")
}

// Stagehand Active: the pod is marked with a run for this Eviction, and the responder's
// status says so with a heartbeat; the request shows it.
func TestTheResponderStartsTheRunAndHeartbeats(t *testing.T) {
	f, _, evictions := evictionFixture(t)
	f.clock = t0.Add(6 * time.Second)
	require.NoError(t, f.sync("evict/ns/"+podName))
	ev, err := f.kube.LifecycleV1alpha1().Evictions("ns").Get(context.Background(), podName+"-0123abcd", metav1.GetOptions{})
	require.NoError(t, err)
	ev.UID = "ev-uid"
	require.NoError(t, evictions.Add(ev))

	require.NoError(t, f.sync("evict/ns/"+podName))
	pod := f.pod(podName)
	assert.Equal(t, "ev-uid", v1alpha1.DeferEvictionOf(pod))
	assert.Equal(t, v1alpha1.DeferBeforeEviction, runOf(t, pod).When)

	require.NoError(t, f.sync("evict/ns/"+podName))
	ev, err = f.kube.LifecycleV1alpha1().Evictions("ns").Get(context.Background(), ev.Name, metav1.GetOptions{})
	require.NoError(t, err)
	rs := responderStatus(&ev.Status, v1alpha1.EvictionResponderName)
	require.NotNil(t, rs.HeartbeatTime)
	assert.Equal(t, "DeferPolicy drain: step 1/1 running", ptr.Deref(rs.Message, ""))
	r, err := f.kube.LifecycleV1alpha1().EvictionRequests("ns").Get(context.Background(), "drain-db-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, r.Status.Conditions, 1)
	assert.Equal(t, v1alpha1.EvictionRequestConditionDeferSteps, r.Status.Conditions[0].Type)
	assert.Equal(t, "Running", r.Status.Conditions[0].Reason, "from the cached Eviction: Stagehand Active")
	assert.Equal(t, ptr.To[int64](1), r.Status.ObservedGeneration)
}

// The garbage collector takes a pod's Eviction with the pod: the requests Stagehand
// answered still learn that their target was evicted; another's request is left alone.
func TestRequestsLearnTheirPodWentWithoutItsEviction(t *testing.T) {
	f, requests, _ := evictionFixture(t)
	ours, err := f.kube.LifecycleV1alpha1().EvictionRequests("ns").Get(context.Background(), "drain-db-0", metav1.GetOptions{})
	require.NoError(t, err)
	ours.Status.Conditions = []metav1.Condition{{Type: v1alpha1.EvictionRequestConditionDeferSteps, Status: metav1.ConditionTrue,
		Reason: "Completed", LastTransitionTime: metav1.NewTime(t0)}}
	ours, err = f.kube.LifecycleV1alpha1().EvictionRequests("ns").UpdateStatus(context.Background(), ours, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, requests.Update(ours))
	other := request("someone-else", "drain.example/a", lifecyclev1alpha1.EvictionRequestIntentEviction, t0)
	other.Spec.Target.Pod.Name = podName
	_, err = f.kube.LifecycleV1alpha1().EvictionRequests("ns").Create(context.Background(), other, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, requests.Add(other))
	require.NoError(t, f.pods.Delete(f.pod(podName)))

	require.NoError(t, f.sync("evict/ns/"+podName))
	assert.Equal(t, []string{"update evictionrequests drain-db-0"}, f.actions(), "only the request Stagehand answered")
	got, err := f.kube.LifecycleV1alpha1().EvictionRequests("ns").Get(context.Background(), "drain-db-0", metav1.GetOptions{})
	require.NoError(t, err)
	cond := meta.FindStatusCondition(got.Status.Conditions, "TargetEvicted")
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, "PodDeleted", cond.Reason)
}
