package framework

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Exec runs command in a container of a running pod through the apiserver's pods/exec, as
// kubectl exec does (WebSocket, SPDY when the upgrade fails), and returns its stdout and
// stderr, each in a buffer of its own (client-go copies the two streams at once). err is a
// k8s.io/client-go/util/exec.ExitError when the command ran and exited non-zero. It gives
// up after 30 s.
func (e *Env) Exec(t *testing.T, ns, pod, container string, command ...string) (stdout, stderr string, err error) {
	t.Helper()
	req := e.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	require.NoError(t, err)
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	require.NoError(t, err)
	// Fall back to SPDY only when the WebSocket upgrade itself fails: any other error (an
	// exit code) means the command already ran.
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}
