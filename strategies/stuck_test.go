package strategies

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

const (
	configError = podstatus.WaitingCreateContainerConfigError
	nonRoot     = "container has runAsNonRoot and image will run as root"
)

// revisionLabels are the labels of revision n of the DeploymentConfig web.
func revisionLabels(n string) map[string]string {
	return map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: n}
}

// stuckRevision is the ReplicaSet web-<n>, which selects the pods of revisionLabels(n).
func stuckRevision(n string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + n, Namespace: "ns"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: revisionLabels(n)}},
	}
}

func TestStuckPod(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	waiting := func(name, reason string, waited time.Duration) *corev1.Pod {
		return testutil.WaitingPod("ns", name, nil, reason, nonRoot, now.Add(-waited))
	}
	terminating := waiting("web-2-d", configError, time.Minute)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		wantPod     string // "": none is stuck
		wantReason  string
		wantRecheck time.Duration
	}{
		{name: "no pods"},
		{name: "a ready pod", pods: []*corev1.Pod{testutil.ReadyPod("ns", "web-2-a", nil, now.Add(-time.Hour))}},
		{name: "a container being created is not stuck", pods: []*corev1.Pod{waiting("web-2-a", "ContainerCreating", time.Hour)}},
		{name: "a config error within its grace is re-checked when the grace runs out",
			pods: []*corev1.Pod{waiting("web-2-a", configError, 10*time.Second)}, wantRecheck: 20 * time.Second},
		{name: "a config error past its grace is stuck", pods: []*corev1.Pod{waiting("web-2-a", configError, 30*time.Second)},
			wantPod: "web-2-a", wantReason: configError},
		{name: "a failing pull has a longer grace", pods: []*corev1.Pod{waiting("web-2-a", podstatus.WaitingImagePullBackOff, time.Minute)},
			wantRecheck: time.Minute},
		{name: "the soonest re-check of several pods",
			pods:        []*corev1.Pod{waiting("web-2-a", podstatus.WaitingErrImagePull, 0), waiting("web-2-b", configError, 25*time.Second)},
			wantRecheck: 5 * time.Second},
		{name: "one stuck pod is enough, whatever the others do",
			pods: []*corev1.Pod{testutil.ReadyPod("ns", "web-2-a", nil, now), waiting("web-2-c", configError, time.Minute),
				waiting("web-2-b", configError, 5*time.Second)},
			wantPod: "web-2-c", wantReason: configError},
		{name: "the first stuck pod by name", pods: []*corev1.Pod{waiting("web-2-c", configError, time.Hour), waiting("web-2-b", configError, time.Minute)},
			wantPod: "web-2-b", wantReason: configError},
		{name: "a terminating pod is not waited for", pods: []*corev1.Pod{terminating}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stuck, recheck := StuckPod("web-2", tt.pods, now)

			assert.Equal(t, tt.wantRecheck, recheck)
			if tt.wantPod == "" {
				assert.Nil(t, stuck)
				return
			}
			require.NotNil(t, stuck)
			assert.Equal(t, PodStuckError{Revision: "web-2", Pod: tt.wantPod, Reason: tt.wantReason,
				Message: `container "app" cannot start: ` + tt.wantReason + ": " + nonRoot}, *stuck)
			assert.Contains(t, stuck.Error(), "pod "+tt.wantPod+`: container "app" cannot start: `+tt.wantReason+": "+nonRoot+"; see kubectl describe pod "+tt.wantPod)
		})
	}
}

// waitAvailable runs Scaler.WaitAvailable for desired pods of rs over a fake cluster that
// holds pods, and returns how long it took and its error.
func waitAvailable(t *testing.T, rs *appsv1.ReplicaSet, desired int32, timeout time.Duration, pods ...runtime.Object) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients := NewKubeClients(fake.NewClientset(pods...), "ns")
	tracker, err := StartPodTracker(ctx, clients, v1alpha1.ConfigLabel+"=web")
	require.NoError(t, err)
	s := &Scaler{Clients: clients, Tracker: tracker, Out: NewProgress(io.Discard)}
	start := time.Now()
	err = s.WaitAvailable(ctx, rs, desired, timeout)
	return time.Since(start), err
}

func TestWaitAvailableFailsOnAStuckPodOfItsRevision(t *testing.T) {
	now := time.Now()
	stuck := testutil.WaitingPod("ns", "web-2-abcde", revisionLabels("2"), configError, nonRoot, now.Add(-time.Minute))

	_, err := waitAvailable(t, stuckRevision("2", 2), 2, 5*time.Second, stuck,
		testutil.ReadyPod("ns", "web-2-fghij", revisionLabels("2"), now))

	var failed *PodStuckError
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, "web-2-abcde", failed.Pod)
	assert.Equal(t, configError, failed.Reason)
	assert.Contains(t, err.Error(), `pod web-2-abcde: container "app" cannot start: CreateContainerConfigError: `+nonRoot)
}

func TestWaitAvailableWaitsOutTheGrace(t *testing.T) {
	inGrace := testutil.WaitingPod("ns", "web-2-abcde", revisionLabels("2"), configError, nonRoot, time.Now())

	_, err := waitAvailable(t, stuckRevision("2", 1), 1, 200*time.Millisecond, inGrace)

	var timeout *TimeoutError
	assert.ErrorAs(t, err, &timeout, "a pod within its grace may still start: only the timeout ends the wait")
}

func TestWaitAvailableIgnoresAStuckPodOfAnotherRevision(t *testing.T) {
	now := time.Now()
	old := testutil.WaitingPod("ns", "web-1-abcde", revisionLabels("1"), configError, nonRoot, now.Add(-time.Hour))

	_, err := waitAvailable(t, stuckRevision("2", 1), 1, time.Minute, old,
		testutil.ReadyPod("ns", "web-2-fghij", revisionLabels("2"), now))

	assert.NoError(t, err, "only the pods of the revision waited for count")
}

// A stuck pod's status does not change, so no watch event wakes the wait: it re-checks
// when the grace runs out.
func TestWaitAvailableRechecksWhenTheGraceRunsOut(t *testing.T) {
	left := 400 * time.Millisecond
	since := time.Now().Add(left - podstatus.DefaultStuckGrace.Config)
	pod := testutil.WaitingPod("ns", "web-2-abcde", revisionLabels("2"), configError, nonRoot, since)

	took, err := waitAvailable(t, stuckRevision("2", 1), 1, 5*time.Second, pod)

	var failed *PodStuckError
	require.ErrorAs(t, err, &failed, "the pod became stuck while the wait ran, with no change to it")
	assert.GreaterOrEqual(t, took, left-50*time.Millisecond, "not before the grace ran out")
	assert.Less(t, took, 3*time.Second, "at the end of the grace, not at the timeout")
}
