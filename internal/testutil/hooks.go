package testutil

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ShellHook is a lifecycle hook that runs script with /bin/sh -c in a new pod built from
// the template container "app" (DeploymentConfig's container), with env added. On the
// local cluster a template of SimulatedImage makes the hook a host process.
func ShellHook(policy v1alpha1.LifecycleHookFailurePolicy, script string, env ...corev1.EnvVar) *v1alpha1.LifecycleHook {
	return &v1alpha1.LifecycleHook{
		FailurePolicy: policy,
		ExecNewPod: &v1alpha1.ExecNewPodHook{
			ContainerName: "app",
			Command:       []string{"/bin/sh", "-c", script},
			Env:           env,
		},
	}
}

// RetryHook is ShellHook with failure policy Retry, maxAttempts and a flat backoff of
// delaySeconds.
func RetryHook(script string, maxAttempts, delaySeconds int32, env ...corev1.EnvVar) *v1alpha1.LifecycleHook {
	h := ShellHook(v1alpha1.LifecycleHookFailurePolicyRetry, script, env...)
	h.Retry = &v1alpha1.RetryParams{MaxAttempts: maxAttempts,
		Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: delaySeconds, MaxDelaySeconds: delaySeconds}}
	return h
}

// Events returns the events of namespace with reason, oldest first.
func Events(t *testing.T, client kubernetes.Interface, namespace, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var events []corev1.Event
	for _, ev := range list.Items {
		if ev.Reason == reason {
			events = append(events, ev)
		}
	}
	return events
}

// HookPods returns the hook pods (stagehand.dev/hook label) of namespace.
func HookPods(t *testing.T, client kubernetes.Interface, namespace string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.HookStageLabel})
	require.NoError(t, err)
	return list.Items
}
