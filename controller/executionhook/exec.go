package executionhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/stagehand-dev/stagehand/internal/apiretry"
)

// Executor runs one command in one running container and reports its exit code.
type Executor interface {
	// Exec runs command in the container and copies its stdout and stderr to out. It
	// returns the exit code when the command ran to its end; an error when it could not
	// run or when the stream broke. Cancelling ctx ends the stream only: as on any
	// kubelet, the command itself goes on (see the timeout in attempt.go).
	Exec(ctx context.Context, namespace, pod, container string, command []string, out io.Writer) (int, error)
}

// podExecutor runs commands through the apiserver's pods/exec, over WebSocket with a
// fallback to SPDY, as kubectl does.
type podExecutor struct {
	config *rest.Config
	kube   kubernetes.Interface
}

// NewPodExecutor is the Executor of a controller: pods/exec with config's identity.
func NewPodExecutor(config *rest.Config, kube kubernetes.Interface) Executor {
	return &podExecutor{config: config, kube: kube}
}

func (e *podExecutor) Exec(ctx context.Context, namespace, pod, container string, command []string, out io.Writer) (int, error) {
	req := e.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.config, "GET", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("building the WebSocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.config, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("building the SPDY executor: %w", err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, err
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out})
	var exit utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.Code, nil
	}
	return 0, err
}

// isForbidden reports whether an exec error is the apiserver's refusal. A refused
// WebSocket upgrade is not a Status error: only its text says so. A denial by an RBAC
// authorizer or admission policy that a just-started apiserver has not read yet is not
// one (apiretry.WarmingUp).
func isForbidden(err error) bool {
	if apiretry.WarmingUp(err) {
		return false
	}
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) ||
		strings.Contains(err.Error(), "is forbidden: User ")
}
