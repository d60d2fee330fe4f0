package deferrun

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

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
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube, webCleanup()), &out, "shop", "", false, ""))
	assert.Equal(t, strings.Join([]string{
		"POD     POLICY        WHEN               PROGRESS   STEP     STATE                        DEADLINE",
		"web-2   web-cleanup   AfterTermination   1/2        upload   Running step 2 attempt 1     in 4m30s",
		"web-3   -             -                  -          -        Waiting for the controller   -",
		"web-4   web-cleanup   AfterTermination   1/2        upload   Running step 2 attempt 1     passed",
		"",
	}, "\n"), out.String())

	// Without the policy the step has no name, and the rest still shows
	out.Reset()
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube), &out, "shop", "", false, ""))
	assert.Contains(t, out.String(), "web-2   web-cleanup   AfterTermination   1/2        -      Running step 2 attempt 1")
}

func TestDeferStatusSaysWhenNoPodIsInItsDeferPhase(t *testing.T) {
	kube := kubefake.NewClientset(deferredPod("web-1", nil, false))
	var out bytes.Buffer
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube), &out, "shop", "", false, ""))
	assert.Equal(t, "No pods are in a defer phase in namespace shop.\n", out.String())

	out.Reset()
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube), &out, "shop", "", false, "json"))
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
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube, webCleanup()), &out, "shop", "web-1", false, ""))
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

	err := printStatus(context.Background(), newDeferClient(kube), &out, "shop", "nope", false, "")
	require.Error(t, err)
	assert.Equal(t, `pod "nope" not found in namespace "shop"`, err.Error())
}
