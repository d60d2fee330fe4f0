package strategies

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestStepSignals(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "ns"}}
	client := fake.NewClientset(rs)
	c := NewKubeClients(client, "ns")
	ctx := context.Background()

	// RecordStep writes the annotation
	st := v1alpha1.StepStatus{Step: 2, Total: 5, Name: "step-2", Action: "pause", State: v1alpha1.StepPaused}
	require.NoError(t, c.RecordStep(ctx, "web-2", st))
	got, err := c.GetReplicaSet(ctx, "web-2")
	require.NoError(t, err)
	recorded, ok := v1alpha1.StepOf(got)
	require.True(t, ok)
	assert.Equal(t, st, recorded)

	// A timed pause ends by itself
	until := time.Now().Add(100 * time.Millisecond)
	promoted, err := c.WaitResumed(ctx, "web-2", 2, &until)
	require.NoError(t, err)
	assert.False(t, promoted)

	// A pause until resumed ends when resume-step reaches the step; an earlier one does not
	set := func(key, value string) {
		rs, err := c.GetReplicaSet(ctx, "web-2")
		require.NoError(t, err)
		rs.Annotations[key] = value
		_, err = client.AppsV1().ReplicaSets("ns").Update(ctx, rs, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	done := make(chan bool, 1)
	go func() {
		promoted, err := c.WaitResumed(ctx, "web-2", 2, nil)
		assert.NoError(t, err)
		done <- promoted
	}()
	set(v1alpha1.ResumeStepAnnotation, "1")
	select {
	case <-done:
		t.Fatal("resumed by the resume of step 1")
	case <-time.After(300 * time.Millisecond):
	}
	set(v1alpha1.ResumeStepAnnotation, "2")
	assert.False(t, <-done)

	// promote ends any pause, and says so
	set(v1alpha1.PromoteAnnotation, "true")
	promoted, err = c.WaitResumed(ctx, "web-2", 3, nil)
	require.NoError(t, err)
	assert.True(t, promoted)

	// A cancelled wait is ErrCancelled
	set(v1alpha1.PromoteAnnotation, "false")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.WaitResumed(cctx, "web-2", 4, nil)
	assert.ErrorIs(t, err, ErrCancelled)
}
