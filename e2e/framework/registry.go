package framework

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// Registry returns the local cluster's container registry: its address (plain HTTP on
// 127.0.0.1), and the credentials that the repositories under its ProtectedPrefix need.
// It is nil on a cluster given by E2E_KUBECONFIG, and on a local cluster started without
// docker-registry installed (outside CI).
func (e *Env) Registry() *localcluster.Registry {
	if e.cluster == nil {
		return nil
	}
	return e.cluster.Registry()
}

// RequireRegistry returns the registry, or skips the test, with the reason, when there is
// none (see Registry).
func (e *Env) RequireRegistry(t *testing.T) *localcluster.Registry {
	t.Helper()
	r := e.Registry()
	switch {
	case r != nil:
		return r
	case e.cluster == nil:
		t.Skip("no registry: the cluster comes from " + KubeconfigEnv + ", and the suite's registry runs only on its local cluster")
	default:
		gate.Require(t, localcluster.RegistryMissing())
		t.Skip("the local cluster started without its registry")
	}
	return nil
}

// CreatePullSecret creates a kubernetes.io/dockerconfigjson Secret called name in namespace,
// with the credentials of the registry's protected repositories, for a DeploymentConfig's
// pod template (imagePullSecrets) or a ServiceAccount. It skips the test when there is no
// registry.
func (e *Env) CreatePullSecret(t *testing.T, namespace, name string) *corev1.Secret {
	t.Helper()
	r := e.RequireRegistry(t)
	secret, err := r.PullSecret(namespace, name)
	require.NoError(t, err)
	created, err := e.Kube.CoreV1().Secrets(namespace).Create(context.Background(), secret, metav1.CreateOptions{})
	require.NoError(t, err, "creating pull secret %s/%s", namespace, name)
	return created
}
