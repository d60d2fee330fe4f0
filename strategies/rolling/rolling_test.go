package rolling

import (
	"context"
	"errors"
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
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

// deployFunc is a strategies.Strategy made of a function.
type deployFunc func(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error

func (f deployFunc) Deploy(ctx context.Context, from, to *appsv1.ReplicaSet, desired int32) error {
	return f(ctx, from, to, desired)
}

func TestFirstRevisionGoesToFirstRollout(t *testing.T) {
	timeout := int64(30)
	params := v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: &timeout, Pre: &v1alpha1.LifecycleHook{}}
	to := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	deployed := errors.New("deployed by the first-rollout strategy")
	tests := []struct {
		name       string
		until      strategies.Until
		wantCalled bool
		wantErr    error
	}{
		{name: "the whole rollout", wantCalled: true, wantErr: deployed},
		{name: "--until=50% is passed on", until: strategies.Until{Percent: 50}, wantCalled: true, wantErr: deployed},
		{name: "--until=mid stays invalid", until: strategies.Until{Stage: strategies.StageMid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			first := func(p v1alpha1.RollingDeploymentStrategyParams, until strategies.Until) strategies.Strategy {
				called = true
				assert.Equal(t, params, p, "the Rolling params")
				assert.Equal(t, tt.until, until)
				return deployFunc(func(_ context.Context, from, got *appsv1.ReplicaSet, desired int32) error {
					assert.Nil(t, from)
					assert.Same(t, to, got)
					assert.Equal(t, int32(3), desired)
					return deployed
				})
			}
			r := New(nil, nil, nil, params, 0, first).WithUntil(tt.until)

			err := r.Deploy(context.Background(), nil, to, 3)

			assert.Equal(t, tt.wantCalled, called)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			var invalid *strategies.InvalidError
			require.ErrorAs(t, err, &invalid)
		})
	}
}

func TestFirstRevisionWithoutFirstRollout(t *testing.T) {
	r := New(nil, nil, nil, v1alpha1.RollingDeploymentStrategyParams{}, 0, nil)
	err := r.Deploy(context.Background(), nil, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}, 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "web-1")
}

func TestSettledState(t *testing.T) {
	rs := func(replicas, ready, available int32, observed int64) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas},
			Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: available,
				ObservedGeneration: observed},
		}
	}
	base := State{Desired: 10, MaxSurge: 3, MaxUnavailable: 2}

	s, ok := settledState(base, newOldSet(rs(10, 10, 10, 2), nil), rs(0, 0, 0, 2))
	require.True(t, ok)
	assert.Equal(t, State{Desired: 10, MaxSurge: 3, MaxUnavailable: 2, OldReplicas: 10, OldAvailable: 10}, s)
	// The first step from that state is the Deployment controller's: 3 new, 2 old fewer.
	assert.Equal(t, int32(3), ScaleUpTarget(s))

	for name, revs := range map[string][2]*appsv1.ReplicaSet{
		"old not ready":       {rs(10, 9, 9, 2), rs(0, 0, 0, 2)},
		"old not yet counted": {rs(10, 10, 10, 1), rs(0, 0, 0, 2)},
		"new not available":   {rs(10, 10, 10, 2), rs(2, 2, 1, 2)},
	} {
		_, ok := settledState(base, newOldSet(revs[0], nil), revs[1])
		assert.False(t, ok, name)
	}
}

// The rollout ends once no old pod is active, as the Deployment controller counts; before
// a post hook it waits until the old pod objects are gone.
func TestWaitOldGoneCountsTerminatingPodsOnlyWithoutAPostHook(t *testing.T) {
	old := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rev": "1"}}}}
	terminating := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: "ns", Labels: map[string]string{"rev": "1"},
		DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"test/keep"}}}
	clients := strategies.NewKubeClients(fake.NewClientset(terminating), "ns")
	tracker, err := strategies.StartPodTracker(t.Context(), clients, "rev")
	require.NoError(t, err)
	wait := func(post *v1alpha1.LifecycleHook) error {
		r := &Rolling{clients: clients, out: strategies.NewProgress(io.Discard),
			params: v1alpha1.RollingDeploymentStrategyParams{Post: post}}
		l := &loop{r: r, tracker: tracker, old: newOldSet(old, nil), progressBy: time.Now().Add(200 * time.Millisecond)}
		return l.waitOldGone(t.Context())
	}

	assert.NoError(t, wait(nil), "a terminating old pod is not active: the rollout is over")
	var timeout *strategies.TimeoutError
	assert.ErrorAs(t, wait(&v1alpha1.LifecycleHook{}), &timeout, "before a post hook the terminating pod must be gone")
}

// One stuck pod of the new revision ends the loop with the waiting reason; a stuck pod of
// the old revision never does; a new pod within its grace is re-checked when it runs out.
func TestObserveFailsOnAStuckNewPodOnly(t *testing.T) {
	now := time.Now()
	labels := func(n string) map[string]string {
		return map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: n}
	}
	rs := func(n string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-" + n, Namespace: "ns"},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels(n)}}}
	}
	waiting := func(name, rev string, waited time.Duration) *corev1.Pod {
		return testutil.WaitingPod("ns", name, labels(rev), podstatus.WaitingCreateContainerConfigError,
			"container has runAsNonRoot and image will run as root", now.Add(-waited))
	}
	tests := []struct {
		name        string
		pods        []runtime.Object
		wantStuck   string        // the stuck pod's name; "": no error
		wantRecheck time.Duration // time.Hour: no re-check
	}{
		{name: "a stuck old pod is not the rollout's", pods: []runtime.Object{waiting("web-1-a", "1", time.Hour),
			testutil.ReadyPod("ns", "web-1-b", labels("1"), now), testutil.ReadyPod("ns", "web-2-a", labels("2"), now)},
			wantRecheck: time.Hour},
		{name: "a new pod within its grace", pods: []runtime.Object{testutil.ReadyPod("ns", "web-1-a", labels("1"), now),
			waiting("web-2-a", "2", 20*time.Second)}, wantRecheck: 10 * time.Second},
		{name: "a stuck new pod fails the rollout", pods: []runtime.Object{testutil.ReadyPod("ns", "web-1-a", labels("1"), now),
			testutil.ReadyPod("ns", "web-2-a", labels("2"), now), waiting("web-2-b", "2", time.Minute)}, wantStuck: "web-2-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clients := strategies.NewKubeClients(fake.NewClientset(tt.pods...), "ns")
			tracker, err := strategies.StartPodTracker(t.Context(), clients, v1alpha1.ConfigLabel+"=web")
			require.NoError(t, err)
			l := &loop{r: &Rolling{clients: clients}, tracker: tracker, old: newOldSet(rs("1"), nil), new: rs("2")}

			err = l.observe(now)

			if tt.wantStuck == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.wantRecheck, l.recheck)
				return
			}
			var stuck *strategies.PodStuckError
			require.ErrorAs(t, err, &stuck)
			assert.Equal(t, strategies.PodStuckError{Revision: "web-2", Pod: tt.wantStuck, Reason: podstatus.WaitingCreateContainerConfigError,
				Message: `container "app" cannot start: CreateContainerConfigError: container has runAsNonRoot and image will run as root`}, *stuck)
		})
	}
}
