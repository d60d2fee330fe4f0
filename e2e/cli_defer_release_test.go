//go:build e2e

package e2e

// Issue 22 item 11: kubectl stagehand defer release on a running pod used to be undone at
// once, because the controller adds the finalizer to selected running pods that lack it.
// The release now records stagehand.dev/defer-released, which the controller honours.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestCLIDeferReleaseOfARunningPodStays(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	createDeferPolicy(t, ns, "rel", nil, stagehandv1.DeferStep{Name: "clean", Image: images.Shell, Command: []string{"true"}})
	running := "trap 'exit 0' TERM; while true; do sleep 0.2; done"
	createPod(t, ns, finishedPod("released", "rel", running))
	env.WaitForPod(t, ns, "released", podTimeout, "the pod running with the finalizer", func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(p)
	})

	// When the running pod is released
	res := pluginOK(t, ns, "defer", "release", "released", "--reason", "test")
	assert.Contains(t, res.Stderr, "stays without the finalizer")

	// Then the controller does not add the finalizer back (the old controller did within
	// milliseconds), while it still adds it to a selected pod that was never released
	got, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), "released", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Annotations, stagehandv1.DeferReleasedAnnotation)
	control := finishedPod("control", "rel", running)
	createPod(t, ns, control)
	env.WaitForPod(t, ns, "control", podTimeout, "the control pod running with the finalizer", func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(p)
	})
	assert.Never(t, func() bool {
		p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), "released", metav1.GetOptions{})
		return err == nil && stagehandv1.HasDeferFinalizer(p)
	}, 3*time.Second, 200*time.Millisecond, "the released pod got the finalizer back")
}
