package deferrun

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func releaseOutput(t *testing.T, res *ReleaseResult) (string, string) {
	t.Helper()
	require.NotNil(t, res)
	var out, errOut bytes.Buffer
	res.Print(&out, &errOut)
	return out.String(), errOut.String()
}

func TestDeferReleaseRemovesTheFinalizerStopsTheRunningStepAndRecordsTheEvent(t *testing.T) {
	pod := deferredPod("web-1", running(1, 1), true)
	done, hangs := stepPod(pod, 1, corev1.PodSucceeded, 0), stepPod(pod, 2, corev1.PodRunning, 0)
	done.UID = "step-1-uid"
	kube := kubefake.NewClientset(pod, done, hangs)
	conflicts := 0
	kube.PrependReactor("update", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts++; conflicts == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-1", nil)
		}
		return false, nil, nil
	})

	res, err := newDeferClient(kube).Release(context.Background(), "shop", "web-1", "the upload hangs, INC-4711")
	require.NoError(t, err)

	// Then the finalizer is gone, after one conflict, and only it
	assert.Equal(t, 2, conflicts, "the update is retried after a conflict")
	got, err := kube.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/other"}, got.Finalizers)
	assert.Equal(t, pod.Annotations, got.Annotations, "the run record is left as it was")
	// And the running step is stopped, the finished one kept for its log
	_, err = kube.CoreV1().Pods("shop").Get(context.Background(), hangs.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the running step pod is deleted")
	_, err = kube.CoreV1().Pods("shop").Get(context.Background(), done.Name, metav1.GetOptions{})
	assert.NoError(t, err, "the finished step pod stays")
	// And a Warning event DeferReleased names the reason
	events, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	ev := events.Items[0]
	assert.Equal(t, v1alpha1.EventDeferReleased, ev.Reason)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-1", UID: pod.UID, ResourceVersion: "7"}, ev.InvolvedObject)
	assert.Equal(t, "kubectl-stagehand", ev.Source.Component)
	assert.Equal(t, deferNow, ev.LastTimestamp.UTC())
	assert.Equal(t, "The finalizer stagehand.dev/defer was removed with kubectl stagehand defer release: the upload hangs, INC-4711. "+
		"Progress was 1/2; the remaining steps do not run. Stopped 1 running step: "+hangs.Name+".", ev.Message)

	out, errOut := releaseOutput(t, res)
	assert.Equal(t, "pod/web-1 released: finalizer stagehand.dev/defer removed, 1 running step stopped\n", out)
	assert.Empty(t, errOut)
}

func TestDeferReleaseOfAPodWithoutTheFinalizerWritesNothing(t *testing.T) {
	pod := deferredPod("web-1", nil, false)
	kube := kubefake.NewClientset(pod)
	res, err := newDeferClient(kube).Release(context.Background(), "shop", "web-1", "uninstall")
	require.NoError(t, err)
	for _, a := range kube.Actions() {
		assert.Contains(t, []string{"get", "list", "watch"}, a.GetVerb(), "no write: %v", a)
	}
	out, _ := releaseOutput(t, res)
	assert.Equal(t, "pod/web-1 does not carry the finalizer stagehand.dev/defer: nothing to release\n", out)
}

func TestDeferReleaseOfARunningPodRecordsItSoThatTheControllerLeavesIt(t *testing.T) {
	pod := deferredPod("web-1", nil, false)
	pod.Finalizers = []string{v1alpha1.DeferFinalizer}
	kube := kubefake.NewClientset(pod)
	res, err := newDeferClient(kube).Release(context.Background(), "shop", "web-1", "")
	require.NoError(t, err)
	out, errOut := releaseOutput(t, res)
	assert.Equal(t, "pod/web-1 released: finalizer stagehand.dev/defer removed, 0 running steps stopped\n", out)
	assert.Contains(t, errOut, "is not being deleted")
	assert.Contains(t, errOut, "stays without the finalizer")
	got, err := kube.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Annotations, v1alpha1.DeferReleasedAnnotation, "the controller reads it and does not add the finalizer back")
	events, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	assert.Equal(t, "The finalizer stagehand.dev/defer was removed with kubectl stagehand defer release: no reason given.", events.Items[0].Message)
}

func TestDeferReleaseReportsAnEventItMayNotRecord(t *testing.T) {
	kube := kubefake.NewClientset(deferredPod("web-1", running(0, 1), true))
	kube.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", nil)
	})
	res, err := newDeferClient(kube).Release(context.Background(), "shop", "web-1", "test")
	require.NoError(t, err, "the finalizer is released all the same")
	out, errOut := releaseOutput(t, res)
	assert.Contains(t, out, "pod/web-1 released")
	assert.Contains(t, errOut, "warning: the event DeferReleased could not be recorded on pod/web-1: ")
}

func TestDeferReleaseOfAMissingPodFails(t *testing.T) {
	res, err := newDeferClient(kubefake.NewClientset()).Release(context.Background(), "shop", "nope", "")
	assert.Nil(t, res)
	require.Error(t, err)
	assert.Equal(t, `pod "nope" not found in namespace "shop"`, err.Error())
}
