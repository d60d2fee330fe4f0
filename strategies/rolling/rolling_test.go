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
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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
