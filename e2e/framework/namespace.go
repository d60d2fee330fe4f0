package framework

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Namespace creates a namespace of the test's own and deletes it when the test ends
// (unless E2E_KEEP is set, to look at what the test left).
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	return CreateNamespace(t, e.Kube)
}

// CreateNamespace creates a namespace named after the test and deletes it when the test
// ends (unless E2E_KEEP is set); package tests with a cluster of their own use it too.
func CreateNamespace(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	prefix := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(prefix, "-") + "-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating the test's namespace")
	t.Cleanup(func() {
		if keep() {
			t.Logf("E2E_KEEP: leaving namespace %s", ns.Name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

func keep() bool { return os.Getenv("E2E_KEEP") != "" }
