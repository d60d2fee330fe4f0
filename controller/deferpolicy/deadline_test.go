package deferpolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Every step ended (the last success was recorded just before the deadline), and the next
// sync comes at or after the deadline (a slow informer, a controller restart): the run
// ends, it does not panic.
func TestARunWhoseStepsAllEndedIsFinishedEvenPastTheDeadline(t *testing.T) {
	run := inRun(2) // Current == Steps: both steps ended
	run.Attempt = 0
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), run)
	f := newFixture(t, pod, cleanup(), readyNode())
	f.clock = run.Deadline.Add(time.Second)

	require.NotPanics(t, func() { _ = f.sync(kindPod + "/ns/" + podName) })
	pod = f.pod(podName)
	assert.Equal(t, v1alpha1.DeferCompleted, runOf(t, pod).Outcome)
	assertReleased(t, pod)
}
