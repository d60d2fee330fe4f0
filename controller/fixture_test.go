package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	shfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// fixture is a controller pair over fake clientsets whose caches the test fills by hand,
// so that a test can call syncHandler directly and look at the actions.
type fixture struct {
	t      *testing.T
	kube   *k8sfake.Clientset
	sh     *shfake.Clientset
	inf    Informers
	dc     *DeploymentConfigController
	pods   *DeployerPodController
	events *record.FakeRecorder
}

func newFixture(t *testing.T, dcs []*v1alpha1.DeploymentConfig, kubeObjs ...runtime.Object) *fixture {
	t.Helper()
	var shObjs []runtime.Object
	for _, dc := range dcs {
		shObjs = append(shObjs, dc)
	}
	f := &fixture{t: t, kube: k8sfake.NewClientset(kubeObjs...), sh: shfake.NewSimpleClientset(shObjs...)}
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	sf := stagehandinformers.NewSharedInformerFactory(f.sh, 0)
	f.inf = Informers{
		DeploymentConfigs: sf.Stagehand().V1alpha1().DeploymentConfigs(),
		ReplicaSets:       kf.Apps().V1().ReplicaSets(),
		DeployerPods:      kf.Core().V1().Pods(),
		ServiceAccounts:   kf.Core().V1().ServiceAccounts(),
		RoleBindings:      kf.Rbac().V1().RoleBindings(),
	}
	log := logrus.NewEntry(logrus.New())
	var err error
	f.dc, err = NewDeploymentConfigController(f.kube, f.sh, f.inf, nil, log)
	require.NoError(t, err)
	f.pods, err = NewDeployerPodController(f.kube, f.inf, "stagehand/deployer:test", nil, log)
	require.NoError(t, err)
	f.events = record.NewFakeRecorder(100)
	f.dc.recorder, f.pods.recorder = f.events, f.events
	for _, dc := range dcs {
		f.cache(dc)
	}
	for _, o := range kubeObjs {
		f.cache(o)
	}
	return f
}

// cache puts obj into the matching informer's store, as if a watch had delivered it.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *v1alpha1.DeploymentConfig:
		err = f.inf.DeploymentConfigs.Informer().GetIndexer().Add(o)
	case *appsv1.ReplicaSet:
		err = f.inf.ReplicaSets.Informer().GetIndexer().Add(o)
	case *corev1.Pod:
		err = f.inf.DeployerPods.Informer().GetIndexer().Add(o)
	case *corev1.ServiceAccount:
		err = f.inf.ServiceAccounts.Informer().GetIndexer().Add(o)
	}
	require.NoError(f.t, err)
}

func (f *fixture) syncDC(name string) error {
	f.kube.ClearActions()
	f.sh.ClearActions()
	return f.dc.syncHandler(context.Background(), "ns/"+name)
}

func (f *fixture) syncRevision(name string) error {
	f.kube.ClearActions()
	return f.pods.syncHandler(context.Background(), "ns/"+name)
}

// actions lists "verb resource[/subresource]" of the kube client's actions, skipping
// the ServiceAccount and RoleBinding upkeep.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		r := a.GetResource().Resource
		if r == "serviceaccounts" || r == "rolebindings" {
			continue
		}
		if s := a.GetSubresource(); s != "" {
			r += "/" + s
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}

func (f *fixture) getRS(name string) *appsv1.ReplicaSet {
	f.t.Helper()
	rs, err := f.kube.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return rs
}

func (f *fixture) getDC(name string) *v1alpha1.DeploymentConfig {
	f.t.Helper()
	dc, err := f.sh.StagehandV1alpha1().DeploymentConfigs("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return dc
}

// keepPodsOnDelete makes pod deletions graceful: the pod stays until the test removes it.
func (f *fixture) keepPodsOnDelete() {
	f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
}

// testDC is a DC as a user writes it: no defaults applied.
func testDC(name, image string, replicas int32) *v1alpha1.DeploymentConfig {
	return &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: v1alpha1.DeploymentConfigSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// testRevision is revision n of dc as the controller creates it, in the given phase and size.
func testRevision(t *testing.T, dc *v1alpha1.DeploymentConfig, n int64, phase v1alpha1.RevisionPhase, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	d := dc.DeepCopy()
	v1alpha1.SetDefaults(d)
	rs, err := newRevision(d, n, configChange(n))
	require.NoError(t, err)
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(phase)
	rs.Spec.Replicas = &replicas
	rs.Status.Replicas = replicas
	rs.UID = types.UID("uid-" + rs.Name)
	rs.ResourceVersion = "1"
	return rs
}

func withLatest(dc *v1alpha1.DeploymentConfig, n int64) *v1alpha1.DeploymentConfig {
	dc = dc.DeepCopy()
	dc.Status.LatestVersion = n
	return dc
}

func deployerPod(t *testing.T, rs *appsv1.ReplicaSet, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	spec, err := snapshotSpec(rs)
	require.NoError(t, err)
	pod := buildDeployerPod(rs, spec, "stagehand/deployer:test")
	pod.Status.Phase = phase
	return pod
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func forbidden(k8stesting.Action) (bool, runtime.Object, error) {
	return true, nil, apierrors.NewForbidden(podsResource.GroupResource(), "web-1-deploy", errors.New("exceeded quota"))
}
