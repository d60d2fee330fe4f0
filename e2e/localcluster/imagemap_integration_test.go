//go:build e2e

package localcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A mapped image runs a command that names another program (a shell) on the host, with
// the mapped binary and its aliases on PATH; a command that names the binary or an alias
// runs the mapped binary directly, wherever the image keeps it.
func TestMappedImageRunsShellCommandsAndAliases(t *testing.T) {
	bin := requireControlPlane(t)
	testapp := buildCommand(t, "e2e", "./testapp", "stagehand-testapp")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Given a cluster that maps example.com/mapped to testapp, also known as testapp-alias
	c, err := Start(ctx, Options{
		Dir: t.TempDir(), BinDir: bin, Log: testLog(t),
		ImageMap: "example.com/mapped:*=" + testapp + " testapp-alias\n",
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)

	tests := []struct {
		name    string
		command []string
		// wantLog is a regular expression for the whole log.
		wantLog string
	}{
		{
			name:    "shell",
			command: []string{"/bin/sh", "-c", "testapp-alias env HOSTNAME PATH && echo done"},
			wantLog: `^HOSTNAME=shell\nPATH=\S*/nodeagent/pods/default_shell_[^/]+/bin:\S*\ndone\n$`,
		},
		{
			// Not on the host: only the replacement by the mapped binary makes it run.
			name:    "alias",
			command: []string{"/usr/local/bin/testapp-alias", "env", "HOSTNAME"},
			wantLog: `^HOSTNAME=alias\n$`,
		},
		{
			name:    "binary-name",
			command: []string{"/image/stagehand-testapp", "env", "HOSTNAME"},
			wantLog: `^HOSTNAME=binary-name\n$`,
		},
	}
	// When each runs as a pod
	for _, tt := range tests {
		createPod(ctx, t, cs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tt.name},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "example.com/mapped:v1", Command: tt.command}},
			},
		})
	}
	// Then it exits 0 with the expected log
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := waitPodFinished(ctx, t, cs, tt.name)
			log, err := cs.CoreV1().Pods(metav1.NamespaceDefault).GetLogs(tt.name, &corev1.PodLogOptions{}).DoRaw(ctx)
			require.NoError(t, err)
			require.Len(t, pod.Status.ContainerStatuses, 1)
			term := pod.Status.ContainerStatuses[0].State.Terminated
			require.NotNil(t, term)
			assert.Equal(t, int32(0), term.ExitCode, "log:\n%s", log)
			assert.Equal(t, corev1.PodSucceeded, pod.Status.Phase)
			assert.Regexp(t, tt.wantLog, string(log))
		})
	}
}

// createPod creates pod in the default namespace, retrying while its ServiceAccount does
// not exist yet.
func createPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = cs.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{})
		return lastErr == nil, nil
	})
	require.NoError(t, err, "creating pod %s: %v", pod.Name, lastErr)
}

// waitPodFinished waits until the pod has succeeded or failed.
func waitPodFinished(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		pod = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	require.NoError(t, err, "waiting for pod %s to finish: %s", name, podSummary(pod))
	return pod
}

func podSummary(pod *corev1.Pod) string {
	if pod == nil {
		return "never seen"
	}
	return fmt.Sprintf("phase %s, containers %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
}
