package controller

import (
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	stagehandscheme "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/scheme"
	dcinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
)

// Informers are the caches the controllers read. The ReplicaSet informer holds only
// revisions (label stagehand.dev/config), the pod informer only deployer pods (label
// stagehand.dev/deployer-pod-for), and the ServiceAccount and RoleBinding informers only
// objects named stagehand-deployer; NewManager sets those filters up.
type Informers struct {
	DeploymentConfigs dcinformers.DeploymentConfigInformer
	ReplicaSets       appsinformers.ReplicaSetInformer
	DeployerPods      coreinformers.PodInformer
	ServiceAccounts   coreinformers.ServiceAccountInformer
	RoleBindings      rbacinformers.RoleBindingInformer
}

// eventScheme knows the DeploymentConfig kind, so events can refer to a DC.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(clientgoscheme.AddToScheme(s))
	utilruntimeMust(stagehandscheme.AddToScheme(s))
	return s
}()

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

func newRecorder(component string) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster()
	return b, b.NewRecorder(eventScheme, corev1.EventSource{Component: component})
}

// startRecording sends the recorded events to the apiserver.
func startRecording(b record.EventBroadcaster, kube kubernetes.Interface) {
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	b.StartLogging(logrus.WithField("component", "events").Debugf)
}

// unwrapTombstone returns the object inside a DeletedFinalStateUnknown.
func unwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func metaOf(obj any) (metav1.Object, error) {
	return meta.Accessor(obj)
}
