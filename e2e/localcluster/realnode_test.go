//go:build e2e && realnode

package localcluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// TestRealNode runs the test app on the real node (containerd, runc, the kubelet) and checks
// what the node agent only imitates: a pulled image with a digest, a containerd container
// ID, logs and exec through the kubelet, a termination message that a real container exit
// wrote, and the kubelet's own refusal of a root image under runAsNonRoot.
// make test-realnode installs the packages, builds the kubelet and the image builder, and
// runs it.
func TestRealNode(t *testing.T) {
	root, err := FindRepoRoot()
	require.NoError(t, err)
	builder := filepath.Join(root, "bin", "tools", "oci-images")
	why := realNodeMissing(DefaultKubeletPath(root))
	if why == "" {
		why = RegistryMissing()
	}
	if _, err := os.Stat(builder); why == "" && err != nil {
		why = "the image builder " + builder + " is missing"
	}
	if why != "" {
		gate.Require(t, why+": run make test-realnode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	began := time.Now()
	c, err := Start(ctx, Options{Dir: t.TempDir(), Registry: true, RealNode: true, Log: testLog(t)})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop()) })
	t.Logf("cluster with the real node up in %s", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	out, err := exec.CommandContext(ctx, builder, "-bin", filepath.Join(root, "bin"), "-out", t.TempDir(),
		"-tag", "dev", "-registry", c.Registry().Address).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("images pushed in %s:\n%s", time.Since(began).Round(time.Millisecond), out)

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	image := c.Registry().Image("stagehand/testapp:dev")
	pods := cs.CoreV1().Pods("default")

	t.Run("serve, logs and exec", func(t *testing.T) {
		began := time.Now()
		_, err := pods.Create(ctx, realNodePod("app", image, nil), metav1.CreateOptions{})
		require.NoError(t, err)
		pod := waitPod(ctx, t, cs, "app", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		t.Logf("Running after %s on %s, pod IP %s", time.Since(began).Round(time.Millisecond),
			pod.Spec.NodeName, pod.Status.PodIP)
		require.Equal(t, RealNodeName, pod.Spec.NodeName)
		st := pod.Status.ContainerStatuses[0]
		t.Logf("image %s, digest %s, container ID %s", st.Image, st.ImageID, st.ContainerID)
		assert.True(t, strings.HasPrefix(st.ContainerID, "containerd://"), st.ContainerID)
		assert.Contains(t, st.ImageID, "@sha256:")

		var logs []byte
		require.Eventually(t, func() bool {
			logs, err = pods.GetLogs("app", &corev1.PodLogOptions{}).DoRaw(ctx)
			return err == nil && bytes.Contains(logs, []byte("tick 1"))
		}, 30*time.Second, 200*time.Millisecond, "logs: %s (%v)", logs, err)
		assert.Contains(t, string(logs), "testapp serving: pid 1, pod app")

		stdout, code, err := execIn(ctx, c, cs, "app", "sh", "-c", "id -u; exit 7")
		require.NoError(t, err)
		assert.Equal(t, 7, code)
		assert.Equal(t, "65532\n", stdout)
		t.Logf("exec: stdout %q, exit code %d", stdout, code)
	})

	t.Run("termination message of a real exit", func(t *testing.T) {
		p := realNodePod("exit", image, []string{"exit", "3", "bye from a real container"})
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		pod := waitPod(ctx, t, cs, "exit", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		term := pod.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(3), term.ExitCode)
		assert.Equal(t, "bye from a real container", term.Message)
		t.Logf("terminated: exit code %d, reason %s, message %q, container ID %s",
			term.ExitCode, term.Reason, term.Message, term.ContainerID)
	})

	t.Run("runAsNonRoot refuses a root image", func(t *testing.T) {
		p := realNodePod("root", c.Registry().Image("stagehand/pause:dev"), nil)
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true)}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		pod := waitPod(ctx, t, cs, "root", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
		})
		w := pod.Status.ContainerStatuses[0].State.Waiting
		assert.Contains(t, w.Message, "runAsNonRoot")
		t.Logf("refused: %s: %s", w.Reason, w.Message)
	})

	kubeletDifferences(ctx, t, c, cs)
}

// realNodePod is a pod of image that tolerates the real node's taint and selects it.
func realNodePod(name, image string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{RealNodeTaintKey: "true"},
			Tolerations: []corev1.Toleration{{Key: RealNodeTaintKey, Operator: corev1.TolerationOpEqual,
				Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: new(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: image, Args: args,
				ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

// waitPod polls the pod until done holds, and fails with its status otherwise.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string,
	done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	var err error
	require.Eventually(t, func() bool {
		pod, err = cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && done(pod)
	}, 2*time.Minute, 100*time.Millisecond, "pod %s: %v %+v", name, err, podStatus(pod))
	return pod
}

func podStatus(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

// execIn runs command in the pod's container "main" through the pods/exec API and returns
// its stdout and exit code.
func execIn(ctx context.Context, c *Cluster, cs kubernetes.Interface, pod string, command ...string) (string, int, error) {
	return execInContainer(ctx, c, cs, pod, "main", command...)
}

// execInContainer is execIn for any container of the pod.
func execInContainer(ctx context.Context, c *Cluster, cs kubernetes.Interface, pod, container string, command ...string) (string, int, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: command, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.RESTConfig(), "POST", req.URL())
	if err != nil {
		return "", 0, err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		return stdout.String(), exitErr.ExitStatus(), nil
	}
	if err != nil {
		return "", 0, err
	}
	return stdout.String(), 0, nil
}
