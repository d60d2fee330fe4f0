package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// ControlPlaneMissing returns why the local control plane cannot run ("" when it can):
// the binaries in binDir are missing. Callers skip their tests locally and fail in CI
// (CI=true), where hack/build-controlplane.sh must have run.
func ControlPlaneMissing(binDir string) string {
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		return fmt.Sprintf("control plane not built (%v); run hack/build-controlplane.sh", err)
	}
	return ""
}

// InCI reports whether CI=true.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates every CRD in <repoRoot>/deploy/crds and waits until each one is
// Established.
func InstallCRDs(ctx context.Context, client dynamic.Interface, repoRoot string) error {
	files, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in deploy/crds (run make generate): %v", err)
	}
	crds := client.Resource(crdResource)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return fmt.Errorf("parsing %s: %w", file, err)
		}
		if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing CRD %s: %w", obj.GetName(), err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conditions {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s never became Established: %w", obj.GetName(), err)
		}
	}
	return nil
}

// Namespace creates a namespace named after the test and deletes it when the test ends.
func Namespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	prefix := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(prefix, "-") + "-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating the test's namespace")
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
