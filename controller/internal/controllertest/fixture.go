// Package controllertest is the test fixture that the controllers' sync tests share: fake
// clientsets, informers whose caches a test fills by hand, and builders of
// DeploymentConfigs and revisions as the controllers see them. Only tests import it.
package controllertest

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// Fixture is a pair of fake clientsets with informers over them. A test builds its
// controller from Kube, Stagehand and Informers, puts Events in as its recorder, fills the
// caches with Cache, calls the controller's syncHandler and looks at the actions.
type Fixture struct {
	T         *testing.T
	Kube      *k8sfake.Clientset
	Stagehand *shfake.Clientset
	Informers plumbing.Informers
	Events    *record.FakeRecorder
}

// New is a fixture whose clientsets and caches hold dcs and kubeObjs.
func New(t *testing.T, dcs []*v1alpha1.DeploymentConfig, kubeObjs ...runtime.Object) *Fixture {
	t.Helper()
	var shObjs []runtime.Object
	for _, dc := range dcs {
		shObjs = append(shObjs, dc)
	}
	f := &Fixture{T: t, Kube: k8sfake.NewClientset(kubeObjs...), Stagehand: shfake.NewSimpleClientset(shObjs...),
		Events: record.NewFakeRecorder(100)}
	// Every write gets a new resourceVersion, as from a real apiserver, so that a cache
	// filled from what the fake holds can be told apart from an older one.
	var rv atomic.Int64
	rv.Store(100)
	bump := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(o.GetObject()); err == nil {
				m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
			}
		}
		return false, nil, nil
	}
	for _, verb := range []string{"create", "update"} {
		f.Kube.PrependReactor(verb, "*", bump)
		f.Stagehand.PrependReactor(verb, "*", bump)
	}
	kf := informers.NewSharedInformerFactory(f.Kube, 0)
	sf := stagehandinformers.NewSharedInformerFactory(f.Stagehand, 0)
	f.Informers = plumbing.Informers{
		DeploymentConfigs: sf.Stagehand().V1alpha1().DeploymentConfigs(),
		ReplicaSets:       kf.Apps().V1().ReplicaSets(),
		StatefulSets:      kf.Apps().V1().StatefulSets(),
		StatefulRevisions: kf.Apps().V1().ControllerRevisions().Informer(),
		DeployerPods:      kf.Core().V1().Pods(),
		ServiceAccounts:   kf.Core().V1().ServiceAccounts(),
		RoleBindings:      kf.Rbac().V1().RoleBindings(),
		Nodes:             kf.Core().V1().Nodes(),
	}
	for _, dc := range dcs {
		f.Cache(dc)
	}
	for _, o := range kubeObjs {
		f.Cache(o)
	}
	return f
}

// Cache puts obj into the matching informer's store, as if a watch had delivered it.
func (f *Fixture) Cache(obj runtime.Object) {
	f.T.Helper()
	var err error
	switch o := obj.(type) {
	case *v1alpha1.DeploymentConfig:
		err = f.Informers.DeploymentConfigs.Informer().GetIndexer().Add(o)
	case *appsv1.ReplicaSet:
		if o.Labels[v1alpha1.WorkloadLabel] == v1alpha1.WorkloadStatefulSet {
			err = f.Informers.StatefulRevisions.GetIndexer().Add(o) // a record's view, as the transform stores it
		} else {
			err = f.Informers.ReplicaSets.Informer().GetIndexer().Add(o)
		}
	case *appsv1.StatefulSet:
		err = f.Informers.StatefulSets.Informer().GetIndexer().Add(o)
	case *corev1.Pod:
		err = f.Informers.DeployerPods.Informer().GetIndexer().Add(o)
	case *corev1.ServiceAccount:
		err = f.Informers.ServiceAccounts.Informer().GetIndexer().Add(o)
	case *corev1.Node:
		err = f.Informers.Nodes.Informer().GetIndexer().Add(o)
	}
	require.NoError(f.T, err)
}

// ClearActions forgets the actions of both clientsets, before a sync.
func (f *Fixture) ClearActions() {
	f.Kube.ClearActions()
	f.Stagehand.ClearActions()
}

// Actions lists "verb resource[/subresource]" of the kube client's actions, skipping
// the ServiceAccount and RoleBinding upkeep.
func (f *Fixture) Actions() []string {
	var out []string
	for _, a := range f.Kube.Actions() {
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

// GetRS reads a ReplicaSet of namespace ns from the fake apiserver.
func (f *Fixture) GetRS(name string) *appsv1.ReplicaSet {
	f.T.Helper()
	rs, err := f.Kube.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.T, err)
	return rs
}

// GetDC reads a DeploymentConfig of namespace ns from the fake apiserver.
func (f *Fixture) GetDC(name string) *v1alpha1.DeploymentConfig {
	f.T.Helper()
	dc, err := f.Stagehand.StagehandV1alpha1().DeploymentConfigs("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.T, err)
	return dc
}

// KeepPodsOnDelete makes pod deletions graceful: the pod stays until the test removes it.
func (f *Fixture) KeepPodsOnDelete() {
	f.Kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
}

// DC is a DC in namespace ns as a user writes it: no defaults applied.
func DC(name, image string, replicas int32) *v1alpha1.DeploymentConfig {
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

// Revision is revision n of dc as the controller creates it (cause ConfigChange), in the
// given phase and size.
func Revision(t *testing.T, dc *v1alpha1.DeploymentConfig, n int64, phase v1alpha1.RevisionPhase, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	d := dc.DeepCopy()
	v1alpha1.SetDefaults(d)
	rs, err := revision.New(d, n)
	require.NoError(t, err)
	rs.Annotations[v1alpha1.CauseAnnotation] = string(v1alpha1.DeploymentCauseConfigChange)
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(phase)
	rs.Spec.Replicas = &replicas
	rs.Status.Replicas = replicas
	rs.UID = types.UID("uid-" + rs.Name)
	rs.ResourceVersion = "1"
	return rs
}

// WithLatest is dc with status.latestVersion n.
func WithLatest(dc *v1alpha1.DeploymentConfig, n int64) *v1alpha1.DeploymentConfig {
	dc = dc.DeepCopy()
	dc.Status.LatestVersion = n
	return dc
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// Forbidden is a reactor that refuses a pod the way a quota does.
func Forbidden(k8stesting.Action) (bool, runtime.Object, error) {
	return true, nil, apierrors.NewForbidden(podsResource.GroupResource(), "web-1-deploy", errors.New("exceeded quota"))
}
