//go:build e2e && realnode

// Package realnode is the real-node suite (issue 37, docs/localcluster.md "Real node"): the
// core of the e2e suite again, with every pod of a rollout (deployer, hook, strategy and
// application pods) running as a real container on a real kubelet, containerd and runc,
// from the images that make oci-images builds and this suite pushes to the cluster's
// registry. The controller stays on the node agent. make test runs it after the other
// suites, with its own tag: it needs root and starts one real node, and a machine runs one
// at a time (kube-proxy owns the host's KUBE-* iptables chains).
package realnode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

var (
	env        *framework.Env
	skipReason string
)

func TestMain(m *testing.M) {
	framework.MainWith(m, "realnode", framework.StartOptions{RealNode: true},
		func(e *framework.Env, reason string) { env, skipReason = e, reason })
}

// requireController skips the test when the suite has no cluster (fails it in CI), and
// waits until the controller runs.
func requireController(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
	env.WaitForController(t)
}

const (
	complete = stagehandv1.RevisionPhaseComplete
	failed   = stagehandv1.RevisionPhaseFailed
)

// realDC is framework.NewDeploymentConfig on the real node, from the pushed test app image.
func realDC(t *testing.T, name string, replicas int32, strategy stagehandv1.DeploymentStrategyType) *stagehandv1.DeploymentConfig {
	t.Helper()
	dc := framework.NewDeploymentConfig(name, replicas, strategy)
	dc.Spec.Template.Spec.Containers[0].Image = env.RealImage(t, "stagehand/testapp").Ref
	framework.OnRealNode(&dc.Spec.Template.Spec)
	return dc
}

// logOf returns the log of a pod's first container.
func logOf(t *testing.T, ns, pod string) string {
	t.Helper()
	raw, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the log of %s/%s: %v", ns, pod, err)
	}
	return string(raw)
}

// checkRanImage checks that pod's first container ran img, pulled by its digest, and
// exited 0.
func checkRanImage(t *testing.T, pod *corev1.Pod, img framework.PushedImage) {
	t.Helper()
	require.NotEmpty(t, pod.Status.ContainerStatuses, "pod %s", pod.Name)
	st := pod.Status.ContainerStatuses[0]
	assert.Equal(t, img.Ref, st.Image, "pod %s", pod.Name)
	assert.Contains(t, st.ImageID, "@"+img.Digest, "pod %s runs the image this suite pushed", pod.Name)
	require.NotNil(t, st.State.Terminated, "pod %s: %+v", pod.Name, st.State)
	assert.Zero(t, st.State.Terminated.ExitCode, "pod %s", pod.Name)
	assert.NotEmpty(t, st.State.Terminated.ContainerID, "pod %s", pod.Name)
}

// checkHooksSucceeded checks that want hook pods of revision ran a container that exited 0.
func checkHooksSucceeded(t *testing.T, pods *framework.PodHistory, revision string, want int) {
	t.Helper()
	var ran int
	for _, p := range pods.Pods() {
		if p.Labels[stagehandv1.HookStageLabel] == "" || p.Labels[stagehandv1.RevisionLabel] != revision {
			continue
		}
		require.NotEmpty(t, p.Status.ContainerStatuses, "hook pod %s", p.Name)
		term := p.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, "hook pod %s: %+v", p.Name, p.Status.ContainerStatuses[0].State)
		assert.Zero(t, term.ExitCode, "hook pod %s", p.Name)
		assert.NotEmpty(t, term.ContainerID, "hook pod %s", p.Name)
		ran++
	}
	assert.Equal(t, want, ran, "hook pods of revision %s", revision)
}
