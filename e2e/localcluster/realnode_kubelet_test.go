//go:build e2e && realnode

package localcluster

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	"k8s.io/apimachinery/pkg/util/intstr"
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

	t.Run("configMap keys and a hostPath in a volume", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings-vol"},
			Data: map[string]string{"db": "postgres://db"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		host := t.TempDir()
		p := realNodePod("vols", shell, nil)
		p.Spec.Volumes = []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings-vol"}}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}}},
		}
		p.Spec.Containers[0] = sleeper("main", "cat /config/db > /host/copied; sleep 3600")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(0))}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}, {Name: "host", MountPath: "/host"}}
		_, err = pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "vols", running)
		var data []byte
		require.Eventually(t, func() bool {
			data, err = os.ReadFile(filepath.Join(host, "copied"))
			return err == nil && len(data) > 0
		}, 10*time.Second, 200*time.Millisecond, "the machine's own folder holds what the pod wrote to its hostPath")
		assert.Equal(t, "postgres://db", string(data), "a configMap volume holds its keys as files")
	})

	t.Run("securityContext: runAsUser and capabilities at run time", func(t *testing.T) {
		p := realNodePod("secctx", shell, nil)
		p.Spec.Containers[0] = sleeper("main", "sleep 3600")
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(1234)),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "secctx", running)
		out, code, err := execIn(ctx, c, cs, "secctx", "sh", "-c", "id -u; grep CapEff /proc/self/status")
		require.NoError(t, err)
		require.Zero(t, code, out)
		assert.Equal(t, "1234\nCapEff:\t0000000000000000\n", out)
	})

	t.Run("own network namespaces: two pods serve one port, probed by the kubelet", func(t *testing.T) {
		app := c.Registry().Image("stagehand/testapp:dev")
		for _, name := range []string{"web-a", "web-b"} {
			p := realNodePod(name, app, nil)
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PORT", Value: "8080"}}
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
			_, err := pods.Create(ctx, p, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		for _, name := range []string{"web-a", "web-b"} {
			pod := waitPod(ctx, t, cs, name, func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
			})
			resp, err := http.Get("http://" + net.JoinHostPort(pod.Status.PodIP, "8080") + "/healthz")
			require.NoError(t, err, "the host reaches the pod at its IP")
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			t.Logf("%s ready at %s:8080", name, pod.Status.PodIP)
		}
	})

	t.Run("a missing claim: FailedMount events, ContainerCreating", func(t *testing.T) {
		p := realNodePod("noclaim", shell, nil)
		p.Spec.NodeName = RealNodeName // the scheduler would keep it Pending
		p.Spec.Containers[0] = sleeper("main", "sleep 3600")
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "late"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		var events *corev1.EventList
		require.Eventually(t, func() bool {
			events, err = cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.name": "noclaim", "reason": "FailedMount"}.String()})
			return err == nil && len(events.Items) > 0
		}, time.Minute, 500*time.Millisecond, "the kubelet reports the wait in a FailedMount event")
		t.Logf("event: %s %s", events.Items[0].Reason, events.Items[0].Message)
		pod, err := pods.Get(ctx, "noclaim", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodPending, pod.Status.Phase)
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

	t.Run("SIGTERM goes to the container's first process only", func(t *testing.T) {
		p := realNodePod("pid1", shell, nil)
		p.Spec.TerminationGracePeriodSeconds = new(int64(10))
		p.Spec.Containers[0] = sleeper("main", `sh -c 'trap "echo child-got-TERM >> /tmp/log" TERM; while :; do sleep 1; done' &
trap 'sleep 2; if [ -s /tmp/log ]; then cat /tmp/log; else echo child-untouched; fi > /dev/termination-log; exit 0' TERM
while :; do sleep 1; done`)
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Finalizers = []string{"stagehand.dev/test-hold"}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(ctx, t, cs, "pid1", running)
		require.NoError(t, pods.Delete(ctx, "pid1", metav1.DeleteOptions{}))
		pod := waitPod(ctx, t, cs, "pid1", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
		})
		assert.Equal(t, "child-untouched\n", pod.Status.ContainerStatuses[0].State.Terminated.Message,
			"the runtime signals PID 1; its children hear of it only from PID 1")
		_, err = pods.Patch(ctx, "pid1", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
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
