package deferstep

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// stepIn is step i's pod for db-0, attempt 1, in phase.
func stepIn(t *testing.T, i int, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	pod := runningPod()
	p := policy("cleanup", v1alpha1.DeferAfterTermination, "db", "a", "b", "c", "d", "e", "f")
	sp, err := Build(pod, &v1alpha1.DeferRun{Steps: 6, Current: i, Attempt: 1}, p, Name(pod, v1alpha1.DeferAfterTermination, i, 1), corev1.ResourceRequirements{})
	require.NoError(t, err)
	sp.UID = types.UID("uid-" + sp.Name)
	sp.Status.Phase = phase
	return sp
}

func TestStopDeletesTheRunningStepPodsOnly(t *testing.T) {
	running, pending := stepIn(t, 0, corev1.PodRunning), stepIn(t, 1, corev1.PodPending)
	succeeded, failed := stepIn(t, 2, corev1.PodSucceeded), stepIn(t, 3, corev1.PodFailed)
	stopping := stepIn(t, 4, corev1.PodRunning)
	stopping.DeletionTimestamp = &metav1.Time{}
	gone := stepIn(t, 5, corev1.PodRunning) // in the caller's list, not in the apiserver
	kube := fake.NewClientset(running, pending, succeeded, failed, stopping)

	stopped, err := Stop(context.Background(), kube.CoreV1(), []*corev1.Pod{running, pending, succeeded, failed, stopping, gone})
	require.NoError(t, err, "a pod that is gone already is no error")
	assert.Equal(t, []string{running.Name, pending.Name}, stopped)

	var deletes []k8stesting.DeleteActionImpl
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			deletes = append(deletes, d)
		}
	}
	require.Len(t, deletes, 3, "the running, the pending and the gone one")
	for _, d := range deletes {
		assert.Equal(t, ptr.To[int64](1), d.DeleteOptions.GracePeriodSeconds, "one second of grace")
		require.NotNil(t, d.DeleteOptions.Preconditions)
		assert.Equal(t, types.UID("uid-"+d.Name), *d.DeleteOptions.Preconditions.UID, "guarded by the UID")
	}
	left, err := kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, left.Items, 3, "the finished ones stay for their logs")
}

func TestStopGoesOnAfterAFailedDeleteAndReturnsTheErrors(t *testing.T) {
	replaced, refused, last := stepIn(t, 0, corev1.PodRunning), stepIn(t, 1, corev1.PodRunning), stepIn(t, 2, corev1.PodRunning)
	kube := fake.NewClientset(replaced, refused, last)
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.(k8stesting.DeleteAction).GetName() {
		case replaced.Name: // a new pod of that name: its UID differs
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), replaced.Name, nil)
		case refused.Name:
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), refused.Name, nil)
		}
		return false, nil, nil
	})

	stopped, err := Stop(context.Background(), kube.CoreV1(), []*corev1.Pod{replaced, refused, last})
	assert.Equal(t, []string{last.Name}, stopped, "the pod after the refused one is stopped all the same")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopping step pod "+refused.Name+": ")
	assert.True(t, apierrors.IsForbidden(err), "the apiserver's error is wrapped")
	assert.NotContains(t, err.Error(), replaced.Name, "a conflict is no error")
}
