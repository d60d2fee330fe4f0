//go:build e2e && realnode

package localcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// kubeletDifferences checks, on the real node, each way docs/localcluster.md says the node
// agent differs from a kubelet ("Real node", "Differences from a kubelet"): what the real
// kubelet does where the agent only imitates, or does not.
func kubeletDifferences(ctx context.Context, t *testing.T, c *Cluster, cs kubernetes.Interface) {
	shell := c.Registry().Image("stagehand/shell:dev")
	pods := cs.CoreV1().Pods("default")
	sleeper := func(name string, script string) corev1.Container {
		return corev1.Container{Name: name, Image: shell, Command: []string{"/bin/sh", "-c", script},
			ImagePullPolicy: corev1.PullIfNotPresent}
	}
	running := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

	t.Run("own filesystems, volumes at absolute paths, readOnly enforced", func(t *testing.T) {
		p := realNodePod("fs", shell, nil)
		p.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		a := sleeper("main", "echo a > /tmp/only-main; echo shared > /shared/file; sleep 3600")
		a.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
		b := sleeper("other", "sleep 3600")
		b.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/ro", ReadOnly: true}}
		p.Spec.Containers = []corev1.Container{a, b}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "fs", running)
		_, code, err := execInContainer(ctx, c, cs, "fs", "other", "test", "-e", "/tmp/only-main")
		require.NoError(t, err)
		assert.Equal(t, 1, code, "a container does not see another container's /tmp")
		var out string
		require.Eventually(t, func() bool {
			out, _, err = execInContainer(ctx, c, cs, "fs", "other", "cat", "/ro/file")
			return err == nil && out == "shared\n"
		}, 10*time.Second, 200*time.Millisecond, "the volume written at /shared/file is /ro/file in the other container: %q %v", out, err)
		out, code, err = execInContainer(ctx, c, cs, "fs", "other", "sh", "-c", "touch /ro/new 2>&1")
		require.NoError(t, err)
		assert.NotZero(t, code, "a readOnly mount refuses a write")
		assert.Contains(t, out, "Read-only file system")
		t.Logf("readOnly: exit %d, %q", code, strings.TrimSpace(out))
	})

	t.Run("memory limit in the container's cgroup", func(t *testing.T) {
		p := realNodePod("limits", shell, nil)
		p.Spec.Containers[0] = sleeper("main", "sleep 3600")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "limits", running)
		out, code, err := execIn(ctx, c, cs, "limits", "sh", "-c",
			"cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes")
		require.NoError(t, err)
		require.Zero(t, code, out)
		assert.Equal(t, "67108864", strings.TrimSpace(out))
	})

	t.Run("image pull errors", func(t *testing.T) {
		for name, image := range map[string]string{
			"missing": c.Registry().Image("stagehand/missing:nope"),
			"invalid": "Stagehand/UPPER:case",
		} {
			_, err := pods.Create(ctx, realNodePod(name, image, nil), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		for name, reasons := range map[string][]string{
			"missing": {"ErrImagePull", "ImagePullBackOff"},
			"invalid": {"InvalidImageName"},
		} {
			pod := waitPod(ctx, t, cs, name, func(p *corev1.Pod) bool {
				return waitingReason(p) != "" && waitingReason(p) != "ContainerCreating"
			})
			assert.Contains(t, reasons, waitingReason(pod), "pod %s", name)
			t.Logf("%s: %s: %s", name, waitingReason(pod), pod.Status.ContainerStatuses[0].State.Waiting.Message)
		}
	})

	t.Run("env from a missing ConfigMap, and activeDeadlineSeconds while it waits", func(t *testing.T) {
		p := realNodePod("noconfig", shell, nil)
		p.Spec.Containers[0] = sleeper("main", "sleep 3600")
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "db"}}}}
		p.Spec.ActiveDeadlineSeconds = new(int64(8))
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		pod := waitPod(ctx, t, cs, "noconfig", func(p *corev1.Pod) bool { return waitingReason(p) == "CreateContainerConfigError" })
		assert.Equal(t, `configmap "settings" not found`, pod.Status.ContainerStatuses[0].State.Waiting.Message)
		events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": "noconfig", "reason": "Failed"}.String()})
		require.NoError(t, err)
		require.NotEmpty(t, events.Items, "the kubelet records a Failed event")
		t.Logf("event: %s %s", events.Items[0].Reason, events.Items[0].Message)
		pod = waitPod(ctx, t, cs, "noconfig", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		assert.Equal(t, "DeadlineExceeded", pod.Status.Reason)
		// As on the node agent: the container that never started stays Waiting, with its reason.
		assert.Equal(t, "CreateContainerConfigError", waitingReason(pod), "%+v", pod.Status.ContainerStatuses[0].State)
	})

	t.Run("grace period ends in SIGKILL, and a finalizer keeps the stopped pod", func(t *testing.T) {
		p := realNodePod("stubborn", shell, nil)
		p.Finalizers = []string{"stagehand.dev/test-hold"}
		p.Spec.Containers[0] = sleeper("main", "trap 'echo got TERM' TERM; while true; do sleep 1; done")
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "stubborn", running)
		deleted := time.Now()
		require.NoError(t, pods.Delete(ctx, "stubborn", metav1.DeleteOptions{}))
		pod := waitPod(ctx, t, cs, "stubborn", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
		})
		term := pod.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(137), term.ExitCode, "SIGKILL after the grace period")
		took := time.Since(deleted)
		assert.GreaterOrEqual(t, took, 2*time.Second, "not before the 2 s grace period")
		t.Logf("stopped after %s: exit %d (%s); the object stays (deletionTimestamp %v, phase %s)",
			took.Round(time.Millisecond), term.ExitCode, term.Reason, pod.DeletionTimestamp, pod.Status.Phase)
		_, err = pods.Patch(ctx, "stubborn", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := pods.Get(ctx, "stubborn", metav1.GetOptions{})
			return err != nil && strings.Contains(err.Error(), "not found")
		}, 30*time.Second, 200*time.Millisecond, "released, the pod goes")
	})
}

func waitingReason(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return ""
	}
	return p.Status.ContainerStatuses[0].State.Waiting.Reason
}
