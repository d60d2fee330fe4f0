package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// uninstallLimit bounds the wait for one object of deploy/ to be gone (the controller's
// namespace and the CRDs take the longest).
const uninstallLimit = 2 * time.Minute

// renderDeploy is deploy/ as `kubectl kustomize` renders it, one object each, in its order.
func (e *Env) renderDeploy(ctx context.Context) ([]*unstructured.Unstructured, error) {
	kubectl, err := e.kubectl()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(e.RepoRoot, "deploy")).Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/: %w", err)
	}
	return decodeAll(out)
}

// UninstallStagehand deletes everything deploy/ installs, the CRDs included, in the reverse
// of its order (the admission policies and their bindings first, the controller's namespace
// and the CRDs last), and waits until each object is gone: afterwards the cluster is as it
// was before InstallCRDs and InstallStagehand. Only on the local cluster that Start
// started; a cluster given by E2E_KUBECONFIG is not the suite's to uninstall.
func (e *Env) UninstallStagehand(ctx context.Context) error {
	if e.cluster == nil {
		return fmt.Errorf("uninstalling Stagehand: only from the local cluster, not %s's", KubeconfigEnv)
	}
	objs, err := e.renderDeploy(ctx)
	if err != nil {
		return err
	}
	slices.Reverse(objs)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
	clients := make([]dynamic.ResourceInterface, len(objs))
	background := metav1.DeletePropagationBackground
	for i, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("mapping %s: %w", gvk, err)
		}
		clients[i] = e.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		err = clients[i].Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	for i, obj := range objs {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, uninstallLimit, true, func(ctx context.Context) (bool, error) {
			_, err := clients[i].Get(ctx, obj.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("%s %s/%s still there after deleting it: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
