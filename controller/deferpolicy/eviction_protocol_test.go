package deferpolicy

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func request(name, requester string, intent lifecyclev1alpha1.EvictionRequestIntent, created time.Time) *lifecyclev1alpha1.EvictionRequest {
	return &lifecyclev1alpha1.EvictionRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created), Generation: 1},
		Spec: lifecyclev1alpha1.EvictionRequestSpec{Requester: requester, Intent: intent,
			Target: lifecyclev1alpha1.EvictionRequestTarget{Pod: &lifecyclev1alpha1.EvictionRequestPodReference{Name: podName, UID: podUID}}},
	}
}

func names(st *lifecyclev1alpha1.EvictionStatus) (out []string) {
	for _, t := range st.TargetResponders {
		out = append(out, t.Name+"="+string(t.State))
	}
	return out
}

// A new Eviction lists the pod's responders and the default evictor in the API's order
// (priority, then the domain from its top label), the first one Active from now.
func TestInitialStatusOrdersTheRespondersAsTheAPIDoes(t *testing.T) {
	pod := runningPod()
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{
		{Name: "other.example/x", Priority: ptr.To[int32](20000)},
		{Name: v1alpha1.EvictionResponderName, Priority: ptr.To(v1alpha1.EvictionResponderPriority)},
		{Name: "zeta.io/first", Priority: ptr.To[int32](50000)},
	}
	st := initialStatus(pod, []*lifecyclev1alpha1.EvictionRequest{request("r", "drain.example/a", "Eviction", t0)}, t0)
	assert.Equal(t, []string{"zeta.io/first=Active", "stagehand.dev/defer=Inactive", "other.example/x=Inactive",
		"imperative-eviction.k8s.io/evictor=Inactive"}, names(&st), "dev before example: the top label decides a tie")
	assert.Equal(t, t0, responderStatus(&st, "zeta.io/first").StartTime.Time)
	assert.Nil(t, responderStatus(&st, v1alpha1.EvictionResponderName).StartTime)
	assert.Equal(t, []lifecyclev1alpha1.Requester{{Name: "drain.example/a", Intent: "Eviction"}}, st.Requesters)
}

// The driver moves the states on as the API allows: a completed responder hands over to
// the next, a silent one is Interrupted after 20 minutes, and withdrawn requests cancel
// the eviction; an ended Eviction does not change.
func TestDriveFollowsTheResponders(t *testing.T) {
	pod := runningPod()
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: v1alpha1.EvictionResponderName, Priority: ptr.To[int32](20000)}}
	want := []*lifecyclev1alpha1.EvictionRequest{request("r", "drain.example/a", "Eviction", t0)}
	st := initialStatus(pod, want, t0)

	assert.False(t, drive(&st, want, 1, t0.Add(time.Minute)), "an Active responder that reports nothing yet keeps its turn")
	responderStatus(&st, v1alpha1.EvictionResponderName).CompletionTime = &metav1.Time{Time: t0.Add(time.Minute)}
	require.True(t, drive(&st, want, 1, t0.Add(2*time.Minute)))
	assert.Equal(t, []string{"stagehand.dev/defer=Completed", "imperative-eviction.k8s.io/evictor=Active"}, names(&st))
	assert.Equal(t, t0.Add(2*time.Minute), responderStatus(&st, evictorName).StartTime.Time)

	silent := initialStatus(pod, want, t0)
	require.True(t, drive(&silent, want, 1, t0.Add(heartbeatDeadline)))
	assert.Equal(t, []string{"stagehand.dev/defer=Interrupted", "imperative-eviction.k8s.io/evictor=Active"}, names(&silent))

	withdrawn := []*lifecyclev1alpha1.EvictionRequest{request("r", "drain.example/a", "Withdrawn", t0)}
	canceled := initialStatus(pod, want, t0)
	require.True(t, drive(&canceled, withdrawn, 3, t0.Add(time.Second)))
	assert.Equal(t, []string{"stagehand.dev/defer=Canceled", "imperative-eviction.k8s.io/evictor=Inactive"}, names(&canceled))
	cond := meta.FindStatusCondition(canceled.Conditions, "Failed")
	require.NotNil(t, cond)
	assert.Equal(t, reasonCanceled, cond.Reason)
	assert.Equal(t, int64(3), cond.ObservedGeneration)
	assert.Equal(t, []lifecyclev1alpha1.Requester{{Name: "drain.example/a", Intent: "Withdrawn"}}, canceled.Requesters)
	assert.False(t, drive(&canceled, want, 3, t0.Add(time.Minute)), "an ended Eviction stays as it is")
}

// A requester whose request is gone stays in the list, Withdrawn; one that asks twice
// asks for the eviction.
func TestRequestersKeepTheWithdrawn(t *testing.T) {
	old := []lifecyclev1alpha1.Requester{{Name: "gone.example/a", Intent: "Eviction"}}
	got := requesters(old, []*lifecyclev1alpha1.EvictionRequest{
		request("r1", "drain.example/b", "Withdrawn", t0), request("r2", "drain.example/b", "Eviction", t0)})
	assert.Equal(t, []lifecyclev1alpha1.Requester{{Name: "drain.example/b", Intent: "Eviction"}, {Name: "gone.example/a", Intent: "Withdrawn"}}, got)
}

// After a failure, a request created later, or one changed back to Eviction, starts the
// eviction again; the requests that were there do not.
func TestRestartedAfterAFailure(t *testing.T) {
	ev := &lifecyclev1alpha1.Eviction{Status: lifecyclev1alpha1.EvictionStatus{Conditions: []metav1.Condition{{
		Type: "Failed", Status: metav1.ConditionTrue, Reason: reasonBlocked, LastTransitionTime: metav1.NewTime(t0)}}}}
	before := request("r", "drain.example/a", "Eviction", t0.Add(-time.Minute))
	assert.False(t, restartedAfter(ev, []*lifecyclev1alpha1.EvictionRequest{before}))
	assert.True(t, restartedAfter(ev, []*lifecyclev1alpha1.EvictionRequest{before, request("r2", "drain.example/a", "Eviction", t0.Add(time.Second))}))
	changed := before.DeepCopy()
	changed.Generation, changed.Status.ObservedGeneration = 2, ptr.To[int64](1)
	assert.True(t, restartedAfter(ev, []*lifecyclev1alpha1.EvictionRequest{changed}))
	ev.Status.Conditions[0].Type = "TargetEvicted"
	assert.False(t, restartedAfter(ev, []*lifecyclev1alpha1.EvictionRequest{changed}), "an evicted pod is not evicted again")
}

// The condition on the requests says where Stagehand's responder is, with its heartbeat.
func TestStepsCondition(t *testing.T) {
	pod := runningPod()
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: v1alpha1.EvictionResponderName, Priority: ptr.To[int32](20000)}}
	ev := &lifecyclev1alpha1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Status: initialStatus(pod, nil, t0)}
	rs := responderStatus(&ev.Status, v1alpha1.EvictionResponderName)
	rs.Message, rs.HeartbeatTime = ptr.To("DeferPolicy p: step 1/2 running"), &metav1.Time{Time: t0}
	cond, ok := stepsCondition(ev, 4)
	require.True(t, ok)
	assert.Equal(t, "Running", cond.Reason)
	assert.Equal(t, "DeferPolicy p: step 1/2 running; last heartbeat 2030-03-01T12:00:00Z", cond.Message)
	assert.Equal(t, int64(4), cond.ObservedGeneration)

	end(&ev.Status, "Failed", reasonBlocked, "blocked", lifecyclev1alpha1.ResponderStateInterrupted, 1)
	cond, _ = stepsCondition(ev, 4)
	assert.Equal(t, "Blocked", cond.Reason)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)

	rs.CompletionTime = &metav1.Time{Time: t0}
	cond, _ = stepsCondition(ev, 4)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	_, ok = stepsCondition(&lifecyclev1alpha1.Eviction{}, 1)
	assert.False(t, ok, "an Eviction without Stagehand")
}

// The steps before a pod stops run once: a pod that a scale-down chose answers an
// eviction with that run, and a scale-down keeps an eviction's run.
func TestBeforeStopStepsRunOnce(t *testing.T) {
	p := policy("drain", v1alpha1.DeferBeforeEviction, "db", "handover")
	done := &v1alpha1.DeferRun{Policy: "sd", PolicyUID: "uid-sd", When: v1alpha1.DeferBeforeScaleDown, Steps: 1, Current: 1, Outcome: v1alpha1.DeferCompleted}
	pod := withRun(runningPod(), done)
	f := newFixture(t, pod, p)
	ev := &lifecyclev1alpha1.Eviction{ObjectMeta: metav1.ObjectMeta{UID: types.UID("ev-1")}}
	a, err := f.c.answerFor(pod, ev)
	require.NoError(t, err)
	assert.True(t, a.done)
	assert.Nil(t, a.start)
	assert.Contains(t, a.message, "ran its BeforeScaleDown steps")

	evicting := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeEviction, Steps: 1}
	pod = withRun(runningPod(), evicting)
	f = newFixture(t, pod, policy("sd", v1alpha1.DeferBeforeScaleDown, "db", "drain"))
	require.NoError(t, f.c.choose(context.Background(), pod, "ReplicaSet rs", "rs/1", policy("sd", v1alpha1.DeferBeforeScaleDown, "db", "drain")))
	got := runOf(t, f.pod(podName))
	assert.Equal(t, v1alpha1.DeferBeforeEviction, got.When, "the scale-down waits for the eviction's run instead of starting its own")
	assert.Equal(t, "rs/1", v1alpha1.DeferScaleDownMarkOf(f.pod(podName)))
}

// Where the apiserver does not serve the EvictionRequest API, a BeforeEviction policy is
// not Ready and says why, with a Warning event.
func TestBeforeEvictionIsNotReadyWithoutTheAPI(t *testing.T) {
	f := newFixture(t, policy("drain", v1alpha1.DeferBeforeEviction, "db", "handover"))
	require.NoError(t, f.sync("policy/ns/drain"))
	cond := meta.FindStatusCondition(f.policyStatus("drain").Conditions, v1alpha1.DeferPolicyConditionReady)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, "EvictionAPINotServed", cond.Reason)
	assert.Contains(t, cond.Message, "lifecycle.k8s.io/v1alpha1")
	assert.NotEmpty(t, eventWith(f.drainEvents(), "EvictionAPINotServed"))
}

// A second eviction after a withdrawn one runs the steps again, after the first run's
// step pods are gone: they have the same names, and their outcomes are not the new run's.
func TestASecondEvictionRunsTheStepsAgain(t *testing.T) {
	p := policy("drain", v1alpha1.DeferBeforeEviction, "db", "handover")
	old := &v1alpha1.DeferRun{Policy: "drain", PolicyUID: "uid-drain", When: v1alpha1.DeferBeforeEviction, Steps: 1,
		Current: 1, Outcome: v1alpha1.DeferSkipped, Message: "every EvictionRequest was withdrawn"}
	pod := withRun(runningPod(), old)
	pod.Annotations[v1alpha1.DeferEvictionAnnotation] = "ev-1"
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: v1alpha1.EvictionResponderName, Priority: ptr.To[int32](20000)}}
	oldStep := stepPod(t, pod, p, &v1alpha1.DeferRun{When: v1alpha1.DeferBeforeEviction, Attempt: 1}, corev1.PodSucceeded, 0)
	f := newFixture(t, pod, p, oldStep)
	ev := &lifecyclev1alpha1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "ns", UID: "ev-2"}, Status: initialStatus(pod, nil, t0)}

	err := f.c.respond(context.Background(), pod, ev, true)
	require.Error(t, err, "it waits for the old step pod to go")
	assert.Equal(t, []string{"delete pods " + oldStep.Name}, f.actions())
	require.NoError(t, f.pods.Delete(oldStep))

	require.NoError(t, f.c.respond(context.Background(), f.pod(podName), ev, true))
	got := runOf(t, f.pod(podName))
	assert.Equal(t, v1alpha1.DeferBeforeEviction, got.When)
	assert.Empty(t, got.Outcome, "a new run")
	assert.Equal(t, "ev-2", v1alpha1.DeferEvictionOf(f.pod(podName)))
}

// A ResponderStatus message holds at most 4,000 characters: a longer one is cut, still
// valid UTF-8.
func TestClipKeepsTheMessageWithinTheAPIsLimit(t *testing.T) {
	assert.Equal(t, "short", clip("short"))
	long := clip(strings.Repeat("é", 3000))
	assert.LessOrEqual(t, len(long), maxMessage)
	assert.True(t, utf8.ValidString(long))
	assert.True(t, strings.HasSuffix(long, "…"))
}
