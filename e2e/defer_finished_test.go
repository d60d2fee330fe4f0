//go:build e2e

package e2e

// Issue 22 item 2: the apiserver deletes every Succeeded or Failed pod at grace period 0,
// so grace period 0 alone is not a forced deletion. A finished pod deleted with a plain
// delete runs its AfterTermination steps (DESIGN.md §4 invariant 8); only a forced
// deletion of a pod whose containers still run skips them (TestDeferForcedDeletionSkipsTheSteps).

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// finishedPod is a restartPolicy Never pod labelled app=<app> that runs script and ends.
func finishedPod(name, app, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers:                    []corev1.Container{{Name: "job", Image: images.Shell, Command: []string{"/bin/sh", "-c", script}}},
		},
	}
}

func TestDeferAPlainDeletionOfAFinishedPodRunsTheSteps(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	createDeferPolicy(t, ns, "job", nil, stagehandv1.DeferStep{
		Name: "clean", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo cleaned $STAGEHAND_POD_NAME"}})
	for _, tc := range []struct {
		name, script string
		phase        corev1.PodPhase
	}{
		{"succeeded", "exit 0", corev1.PodSucceeded},
		{"failed", "exit 3", corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given a pod that ran to its end and carries the finalizer
			createPod(t, ns, finishedPod(tc.name, "job", tc.script))
			pod := env.WaitForPod(t, ns, tc.name, podTimeout, "the pod "+string(tc.phase)+" with the finalizer", func(p *corev1.Pod) bool {
				return p != nil && p.Status.Phase == tc.phase && stagehandv1.HasDeferFinalizer(p)
			})
			progress := watchProgress(t, ns, tc.name)

			// When it is deleted as kubectl delete pod does (the apiserver sets grace period 0)
			deletePod(t, ns, tc.name, nil)

			// Then its step runs, and the pod goes afterwards
			assert.Equal(t, []string{"0/1", "1/1"}, progress.waitGone(t, deferTimeout))
			steps := stepPods(t, ns, string(pod.UID))
			require.Len(t, steps, 1, "one step pod")
			assert.Equal(t, corev1.PodSucceeded, steps[0].Status.Phase)
			assert.Equal(t, "cleaned "+tc.name+"\n", podLog(t, ns, steps[0].Name))
			events := waitEvents(t, ns, tc.name, stagehandv1.EventDeferCompleted, 1)
			assert.Empty(t, eventsWith(events, stagehandv1.EventDeferSkipped), "events: %v", events)
		})
	}
}

// The Skipped event of a forced deletion names the policy that matched.
func TestDeferForcedDeletionNamesThePolicy(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	createDeferPolicy(t, ns, "forced", nil, stagehandv1.DeferStep{Name: "never-runs", Image: images.Shell, Command: []string{"true"}})
	createPod(t, ns, finishedPod("forced", "forced", "trap 'exit 0' TERM; while true; do sleep 0.2; done"))
	pod := env.WaitForPod(t, ns, "forced", podTimeout, "the pod running with the finalizer", func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(p)
	})
	progress := watchProgress(t, ns, "forced")

	// kubectl delete pod --grace-period=0 --force
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "forced", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

	progress.waitGone(t, podTimeout)
	assert.Empty(t, stepPods(t, ns, string(pod.UID)), "no step runs")
	skipped := eventsWith(waitEvents(t, ns, "forced", stagehandv1.EventDeferSkipped, 1), stagehandv1.EventDeferSkipped)
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0], "DeferPolicy forced:")
	assert.NotContains(t, skipped[0], "no DeferPolicy")
}
