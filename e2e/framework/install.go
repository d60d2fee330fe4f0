package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// ControllerNamespace is where deploy/ installs the controller.
const ControllerNamespace = "stagehand-system"

// ControllerSelector selects the controller's pods.
const ControllerSelector = "app.kubernetes.io/name=stagehand-controller"

// localControllerArgs are added to the controller on the local cluster. The image
// triggers poll every 2 s instead of every minute, so that the trigger tests see a pushed
// tag quickly; the suite's registry is on loopback, which needs no flag. The metrics
// address is the pod's own IP: every pod shares the host's network, and each replica
// gets a loopback address of its own from the node agent (see adaptControllerForLocalCluster).
// BeforeEviction heartbeats come every 20 s, the API's shortest interval, so that a test
// sees more than one.
var localControllerArgs = []string{"--metrics-addr=$(POD_IP):8080", "--image-poll-interval=2s", "--registry-qps=20", "--registry-burst=20",
	"--defer-eviction-heartbeat=20s"}

// InstallStagehand installs deploy/ (kubectl kustomize, applied through the API) on the
// local cluster and waits until the controller pod runs. On a cluster given by
// E2E_KUBECONFIG it does nothing: make e2e-kind installs deploy/ itself. The manifests are
// applied as shipped, RBAC included; on the local cluster the controller's pods get a
// loopback IP each for their metrics port, their readiness is probed every second, and
// their image polling is faster (see localControllerArgs).
func (e *Env) InstallStagehand(ctx context.Context) error {
	if e.cluster == nil {
		return nil
	}
	objs, err := e.renderDeploy(ctx)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GetName() == "stagehand-controller" {
			if err := adaptControllerForLocalCluster(obj, e.controllerArgs, e.controllerEnv); err != nil {
				return err
			}
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			continue // installed by Start
		}
		if optionalPolicy(obj) && !served(mapper, obj) {
			// Before Kubernetes 1.36 (make test-oldest): left out, as docs/install.md says;
			// the DeferPolicy controller adds the finalizer itself.
			logrus.Warnf("%s %s left out: the cluster does not serve %s", obj.GetKind(), obj.GetName(), obj.GetAPIVersion())
			continue
		}
		if err := e.apply(ctx, mapper, obj); err != nil {
			return err
		}
	}
	return nil
}

// optionalPolicy is an object of deploy/ that a cluster before Kubernetes 1.36 does without:
// the MutatingAdmissionPolicy of the DeferPolicy finalizer and its binding.
func optionalPolicy(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "MutatingAdmissionPolicy" || obj.GetKind() == "MutatingAdmissionPolicyBinding"
}

// served reports whether the cluster serves obj's kind at its version.
func served(mapper meta.RESTMapper, obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

func (e *Env) apply(ctx context.Context, mapper meta.RESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("mapping %s: %w", gvk, err)
	}
	client := e.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	existing, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	case err == nil:
		obj.SetResourceVersion(existing.GetResourceVersion())
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
	}
	if err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func adaptControllerForLocalCluster(obj *unstructured.Unstructured, extra []string, setEnv map[string]string) error {
	containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		return fmt.Errorf("the controller Deployment has no containers: %v", err)
	}
	for i := range containers {
		c := containers[i].(map[string]any)
		if probe, ok := c["readinessProbe"].(map[string]any); ok {
			probe["periodSeconds"] = int64(1) // a restarted replica is seen ready at once
		}
		args, _ := c["args"].([]any)
		for _, a := range append(slices.Clone(localControllerArgs), extra...) {
			args = append(args, a)
		}
		c["args"] = args
		env, _ := c["env"].([]any)
		for _, name := range slices.Sorted(maps.Keys(setEnv)) {
			env = slices.DeleteFunc(env, func(v any) bool { m, _ := v.(map[string]any); return m["name"] == name })
			env = append(env, map[string]any{"name": name, "value": setEnv[name]})
		}
		c["env"] = append(env, map[string]any{"name": "POD_IP",
			"valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "status.podIP"}}})
		containers[i] = c
	}
	if err := unstructured.SetNestedField(obj.Object, "true", "spec", "template", "metadata", "annotations", nodeagent.OwnIPAnnotation); err != nil {
		return err
	}
	return unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
}

func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding deploy/: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// kubectl is the kubectl of the cluster's version (bin/k8s-<version>/, which
// STAGEHAND_KUBERNETES_VERSION chooses), else the one on the PATH.
func (e *Env) kubectl() (string, error) {
	path := filepath.Join(localcluster.DefaultBinDir(e.RepoRoot), "kubectl")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if path, err := exec.LookPath("kubectl"); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("no kubectl in %s or on PATH (run make controlplane)", filepath.Dir(path))
}

// Kubectl runs kubectl against the suite's cluster in namespace ns and returns its
// combined output.
func (e *Env) Kubectl(ns string, args ...string) (string, error) {
	kubectl, err := e.kubectl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", e.Kubeconfig, "--namespace", ns}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// WaitForController waits until a controller pod runs and is ready.
func (e *Env) WaitForController(t *testing.T) *corev1.Pod {
	t.Helper()
	pods := e.WaitForPods(t, ControllerNamespace, ControllerSelector, 90*time.Second, "a ready controller pod", func(pods []*corev1.Pod) bool {
		for _, p := range pods {
			if p.DeletionTimestamp == nil && PodReady(p) {
				return true
			}
		}
		return false
	})
	for _, p := range pods {
		if p.DeletionTimestamp == nil && PodReady(p) {
			return p
		}
	}
	return nil
}

// ControllerLogs returns the logs of the controller pods, for failure messages.
func (e *Env) ControllerLogs() string {
	pods, err := e.Kube.CoreV1().Pods(ControllerNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: ControllerSelector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := e.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		fmt.Fprintf(&b, "--- %s (err %v)\n%s\n", p.Name, err, raw)
	}
	return b.String()
}
