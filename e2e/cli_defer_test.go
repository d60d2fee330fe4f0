//go:build e2e

package e2e

// kubectl stagehand defer status and defer release, with the real plugin binary, on a
// pod whose DeferPolicy step hangs: the case an operator releases by hand.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestCLIDeferStatusAndReleaseOfAPodWhoseStepHangs(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	dataClaim(t, ns)
	createDeferPolicy(t, ns, "hang", func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](600) },
		shellStep("hangs", "sleep 3600"))
	pod := startAppPod(t, ns, appPod("app", "hang", "true"))

	// Given no pod is in its defer phase yet
	res := pluginOK(t, ns, "defer", "status")
	assert.Equal(t, "No pods are in a defer phase in namespace "+ns+".\n", res.Stdout)

	// When the pod is deleted and its one step hangs
	progress := watchProgress(t, ns, "app")
	deletePod(t, ns, "app", nil)
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 1 && steps[0].Status.Phase == corev1.PodRunning
	}, deferTimeout, 100*time.Millisecond, "the hanging step to run")
	step := stepPods(t, ns, string(pod.UID))[0]

	// Then defer status shows it running step 1, with progress 0/1 and the deadline ahead
	res = pluginOK(t, ns, "defer", "status")
	t.Logf("defer status:\n%s", res.Stdout)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 2, "a header and one pod: %q", res.Stdout)
	assert.Equal(t, []string{"POD", "POLICY", "WHEN", "PROGRESS", "STEP", "STATE", "DEADLINE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"app", "hang", "AfterTermination", "0/1", "hangs", "Running", "step", "1", "attempt", "1", "in"},
		strings.Fields(lines[1])[:11])
	assert.Regexp(t, `in (9m\d+s|10m)$`, lines[1], "the 600s grace period counts from the step's start")

	// And with the pod's name it lists the step pod
	res = pluginOK(t, ns, "defer", "status", "app")
	t.Logf("defer status app:\n%s", res.Stdout)
	assert.Regexp(t, step.Name+`\s+1 \(hangs\)\s+Running\s+-`, res.Stdout)

	// When it is released
	res = pluginOK(t, ns, "defer", "release", "app", "--reason", "test")
	t.Logf("defer release app --reason test:\n%s%s", res.Stdout, res.Stderr)
	assert.Equal(t, "pod/app released: finalizer stagehand.dev/defer removed, 1 running step stopped\n", res.Stdout)
	assert.Empty(t, res.Stderr)

	// Then the pod goes, its step pod is stopped, and the event says who did it and why
	progress.waitGone(t, podTimeout)
	require.Eventually(t, func() bool {
		steps := stepPods(t, ns, string(pod.UID))
		return len(steps) == 0 || steps[0].DeletionTimestamp != nil || steps[0].Status.Phase != corev1.PodRunning
	}, podTimeout, 100*time.Millisecond, "the hanging step's pod to be stopped")
	events := podEvents(t, ns, "app")
	released := eventsWith(events, stagehandv1.EventDeferReleased)
	require.Len(t, released, 1, "events: %v", events)
	t.Logf("event: %s", released[0])
	assert.Contains(t, released[0], "removed with kubectl stagehand defer release: test.")
	assert.Contains(t, released[0], "Stopped 1 running step: "+step.Name)
	ev, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", stagehandv1.EventDeferReleased).String(),
	})
	require.NoError(t, err)
	require.Len(t, ev.Items, 1)
	assert.Equal(t, corev1.EventTypeWarning, ev.Items[0].Type)
	assert.Equal(t, pod.UID, ev.Items[0].InvolvedObject.UID)

	// And the pod is no longer in its defer phase; releasing it again fails: it is gone
	res = pluginOK(t, ns, "defer", "status")
	assert.Equal(t, "No pods are in a defer phase in namespace "+ns+".\n", res.Stdout)
	again := plugin(t, ns, "defer", "release", "app")
	assert.Equal(t, 1, again.ExitCode, "%s", again)
	assert.Contains(t, again.Stderr, `pod "app" not found in namespace "`+ns+`"`)
	t.Logf("defer release app, once it is gone: exit %d\n%s", again.ExitCode, again.Stderr)
}
