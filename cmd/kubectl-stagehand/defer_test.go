package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

var deferNow = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(deferNow.Add(d)); return &t }

// deferredPod is a pod of ns with the run recorded (nil: none), Terminating with the
// finalizer when terminating.
func deferredPod(name string, run *v1alpha1.DeferRun, terminating bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "shop", UID: types.UID(name + "-uid"), ResourceVersion: "7",
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{},
	}}
	if run != nil {
		pod.Annotations[v1alpha1.DeferRunAnnotation] = run.Encode()
		pod.Annotations[v1alpha1.DeferProgressAnnotation] = run.Progress()
	}
	if terminating {
		pod.DeletionTimestamp = at(-time.Minute)
		pod.Finalizers = []string{"example.com/other", v1alpha1.DeferFinalizer}
	}
	return pod
}

// stepPod is attempt 1 of step i (from 1) for pod, in phase, with exit code when it ended.
func stepPod(pod *corev1.Pod, i int, phase corev1.PodPhase, exit int32) *corev1.Pod {
	sp := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name + "-defer-" + string(pod.UID)[:3] + "-" + string(rune('0'+i)) + "-1", Namespace: pod.Namespace,
			UID:               types.UID(pod.Name + "-step"),
			CreationTimestamp: metav1.NewTime(deferNow.Add(time.Duration(i) * time.Second)),
			Labels: map[string]string{
				v1alpha1.DeferStepOfLabel: string(pod.UID), v1alpha1.DeferStepLabel: string(rune('0' + i)),
				v1alpha1.DeferPolicyLabel: "web-cleanup",
			},
			Annotations: map[string]string{v1alpha1.DeferStepForAnnotation: pod.Name},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase != corev1.PodRunning {
		sp.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha1.DeferStepContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}
	}
	return sp
}

func webCleanup() *v1alpha1.DeferPolicy {
	return &v1alpha1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cleanup", Namespace: "shop"},
		Spec:       v1alpha1.DeferPolicySpec{Steps: []v1alpha1.DeferStep{{Name: "flush"}, {Name: "upload"}}},
	}
}

func running(current, attempt int) *v1alpha1.DeferRun {
	return &v1alpha1.DeferRun{Policy: "web-cleanup", When: v1alpha1.DeferAfterTermination, Steps: 2,
		Started: at(-30 * time.Second), Deadline: at(270 * time.Second), Current: current, Attempt: attempt}
}

func newDeferClient(kube *kubefake.Clientset, policies ...runtime.Object) *deferClient {
	return &deferClient{kube: kube, stagehand: stagehandfake.NewSimpleClientset(policies...), now: func() time.Time { return deferNow }}
}

func TestDeferState(t *testing.T) {
	backoff := running(1, 2)
	backoff.NotBefore = at(4 * time.Second)
	backoffOver := running(1, 2)
	backoffOver.NotBefore = at(-time.Second)
	waiting := running(0, 0)
	waiting.Started, waiting.Deadline = nil, nil
	done := running(2, 0)
	failed := running(2, 0)
	failed.Outcome = v1alpha1.DeferFailed
	tests := []struct {
		name        string
		run         *v1alpha1.DeferRun
		terminating bool
		want        string
	}{
		{name: "deleted, no run recorded yet", terminating: true, want: "Waiting for the controller"},
		{name: "running pod without a run", want: "No defer run"},
		{name: "containers still run", run: waiting, terminating: true, want: "Waiting for containers to stop"},
		{name: "attempt not recorded yet", run: running(0, 0), terminating: true, want: "Starting step 1"},
		{name: "a step runs", run: running(1, 3), terminating: true, want: "Running step 2 attempt 3"},
		{name: "back-off", run: backoff, terminating: true, want: "Back-off until " + deferNow.Add(4*time.Second).Local().Format(time.TimeOnly)},
		{name: "back-off over", run: backoffOver, terminating: true, want: "Running step 2 attempt 2"},
		{name: "every step ran, no outcome yet", run: done, terminating: true, want: "Finishing"},
		{name: "outcome", run: failed, want: "Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeferClient(kubefake.NewClientset())
			st := d.statusOf(context.Background(), deferredPod("web-1", tt.run, tt.terminating))
			assert.Equal(t, tt.want, st.State)
		})
	}
}

func TestDeferStatusListsThePodsInTheirDeferPhase(t *testing.T) {
	finished := running(2, 0)
	finished.Outcome, finished.Message = v1alpha1.DeferCompleted, "all 2 steps succeeded"
	late := running(1, 1)
	late.Deadline = at(-time.Second)
	stuck := deferredPod("web-2", running(1, 1), true)
	kube := kubefake.NewClientset(
		stuck,
		stepPod(stuck, 2, corev1.PodRunning, 0), // a step pod is never a row
		deferredPod("web-3", nil, true),
		deferredPod("web-4", late, true),
		deferredPod("web-5", finished, false), // its run ended: not in its defer phase
		deferredPod("web-6", nil, false),      // a pod without any run
	)
	var out bytes.Buffer
	require.NoError(t, newDeferClient(kube, webCleanup()).printStatus(context.Background(), &out, "shop", "", false, ""))
	assert.Equal(t, strings.Join([]string{
		"POD     POLICY        WHEN               PROGRESS   STEP     STATE                        DEADLINE",
		"web-2   web-cleanup   AfterTermination   1/2        upload   Running step 2 attempt 1     in 4m30s",
		"web-3   -             -                  -          -        Waiting for the controller   -",
		"web-4   web-cleanup   AfterTermination   1/2        upload   Running step 2 attempt 1     passed",
		"",
	}, "\n"), out.String())

	// Without the policy the step has no name, and the rest still shows
	out.Reset()
	require.NoError(t, newDeferClient(kube).printStatus(context.Background(), &out, "shop", "", false, ""))
	assert.Contains(t, out.String(), "web-2   web-cleanup   AfterTermination   1/2        -      Running step 2 attempt 1")
}

func TestDeferStatusSaysWhenNoPodIsInItsDeferPhase(t *testing.T) {
	kube := kubefake.NewClientset(deferredPod("web-1", nil, false))
	var out bytes.Buffer
	require.NoError(t, newDeferClient(kube).printStatus(context.Background(), &out, "shop", "", false, ""))
	assert.Equal(t, "No pods are in a defer phase in namespace shop.\n", out.String())

	out.Reset()
	require.NoError(t, newDeferClient(kube).printStatus(context.Background(), &out, "shop", "", false, "json"))
	assert.Equal(t, "[]\n", out.String(), "an empty list for scripts")
}

func TestDeferStatusOfOnePodShowsTheOutcomeAndTheStepPods(t *testing.T) {
	run := running(2, 0)
	run.Outcome, run.Failed, run.Message = v1alpha1.DeferFailed, []string{"flush"}, "steps failed: flush"
	pod := deferredPod("web-1", run, true)
	other := deferredPod("web-9", nil, true)
	kube := kubefake.NewClientset(pod, stepPod(pod, 2, corev1.PodSucceeded, 0), stepPod(pod, 1, corev1.PodFailed, 3),
		stepPod(other, 1, corev1.PodRunning, 0))
	var out bytes.Buffer
	require.NoError(t, newDeferClient(kube, webCleanup()).printStatus(context.Background(), &out, "shop", "web-1", false, ""))
	assert.Equal(t, strings.Join([]string{
		"POD     POLICY        WHEN               PROGRESS   STEP   STATE    DEADLINE",
		"web-1   web-cleanup   AfterTermination   2/2        -      Failed   -",
		"Outcome: Failed: steps failed: flush",
		"",
		"STEP POD              STEP         PHASE       EXIT CODE",
		"web-1-defer-web-1-1   1 (flush)    Failed      3",
		"web-1-defer-web-2-1   2 (upload)   Succeeded   0",
		"",
	}, "\n"), out.String())

	err := newDeferClient(kube).printStatus(context.Background(), &out, "shop", "nope", false, "")
	require.Error(t, err)
	assert.Equal(t, `pod "nope" not found in namespace "shop"`, err.Error())
	assert.Equal(t, 1, exitCode(err))
}

func releaseOutput(t *testing.T, res *releaseResult) (string, string) {
	t.Helper()
	require.NotNil(t, res)
	var out, errOut bytes.Buffer
	res.print(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
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

	res, err := newDeferClient(kube).release(context.Background(), "shop", "web-1", "the upload hangs, INC-4711")
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
	res, err := newDeferClient(kube).release(context.Background(), "shop", "web-1", "uninstall")
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
	res, err := newDeferClient(kube).release(context.Background(), "shop", "web-1", "")
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
	res, err := newDeferClient(kube).release(context.Background(), "shop", "web-1", "test")
	require.NoError(t, err, "the finalizer is released all the same")
	out, errOut := releaseOutput(t, res)
	assert.Contains(t, out, "pod/web-1 released")
	assert.Contains(t, errOut, "warning: the event DeferReleased could not be recorded on pod/web-1: ")
}

func TestDeferReleaseOfAMissingPodFails(t *testing.T) {
	res, err := newDeferClient(kubefake.NewClientset()).release(context.Background(), "shop", "nope", "")
	assert.Nil(t, res)
	require.Error(t, err)
	assert.Equal(t, `pod "nope" not found in namespace "shop"`, err.Error())
	assert.Equal(t, 1, exitCode(err), "docs/cli.md: 1 when the operation failed")
}
