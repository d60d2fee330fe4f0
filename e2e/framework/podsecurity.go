package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// EnforceRestricted labels the namespace so that Pod Security admission enforces the
// "restricted" standard, and checks that it does: a pod without a security context is
// refused.
func (e *Env) EnforceRestricted(t *testing.T, ns string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		n.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
		_, err = e.Kube.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "labelling namespace %s for Pod Security restricted", ns)

	// Pod Security admission reads namespaces from an informer: wait until it has seen the label.
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"), nil
	})
	require.NoError(t, err, "Pod Security admission must refuse a pod without a security context in %s", ns)
}

// RestrictTemplate makes a pod template pass "restricted": non-root, RuntimeDefault
// seccomp, no privilege escalation, no capabilities. Hook pods copy it.
func RestrictTemplate(spec *corev1.PodSpec) {
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range spec.Containers {
		spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}
