package plumbing

import (
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandscheme "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/scheme"
	dcinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Informers are the caches the controllers read. The ReplicaSet informer holds only
// revisions (label stagehand.dev/config), the pod informer only deployer pods (label
// stagehand.dev/deployer-pod-for), and the ServiceAccount and RoleBinding informers only
// objects named stagehand-deployer; the manager sets those filters up.
type Informers struct {
	DeploymentConfigs dcinformers.DeploymentConfigInformer
	ReplicaSets       appsinformers.ReplicaSetInformer
	DeployerPods      coreinformers.PodInformer
	// Nodes, when set, let the deployer-pod controller tell a deployer pod on a lost node
	// (NotReady, or deleted) from one that runs.
	Nodes           coreinformers.NodeInformer
	ServiceAccounts coreinformers.ServiceAccountInformer
	RoleBindings    rbacinformers.RoleBindingInformer
	// DeferPolicies, when set, route the DC controller's scale-downs through BeforeScaleDown
	// policies (controller/deferpolicy).
	DeferPolicies dcinformers.DeferPolicyInformer
	// StatefulSets, when set, holds the StatefulSets of DeploymentConfigs with
	// spec.statefulSet (label stagehand.dev/config).
	StatefulSets appsinformers.StatefulSetInformer
	// StatefulRevisions, when set, is the informer of the StatefulSet revisions' records,
	// whose store holds their ReplicaSet views (StatefulRevisionView).
	StatefulRevisions cache.SharedIndexInformer
}

// Revisions lists the revisions of both kinds (RevisionLister).
func (i Informers) Revisions() appslisters.ReplicaSetLister {
	var stateful cache.Indexer
	if i.StatefulRevisions != nil {
		stateful = i.StatefulRevisions.GetIndexer()
	}
	return NewRevisionLister(i.ReplicaSets.Lister(), stateful)
}

// RevisionInformers are the informers of the revisions of both kinds, for event handlers
// and cache syncs.
func (i Informers) RevisionInformers() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{i.ReplicaSets.Informer()}
	if i.StatefulRevisions != nil {
		out = append(out, i.StatefulRevisions)
	}
	return out
}

// RevisionsSynced reports whether the revision informers have synced.
func (i Informers) RevisionsSynced() bool {
	for _, inf := range i.RevisionInformers() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
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

// NewRecorder is a controller's event broadcaster and recorder, as component.
func NewRecorder(component string) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster()
	return b, b.NewRecorder(eventScheme, corev1.EventSource{Component: component})
}

// StartRecording sends the recorded events to the apiserver.
func StartRecording(b record.EventBroadcaster, kube kubernetes.Interface) {
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	b.StartLogging(logrus.WithField("component", "events").Debugf)
}

// UnwrapTombstone returns the object inside a DeletedFinalStateUnknown.
func UnwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// MetaOf is the object metadata of an informer's object.
func MetaOf(obj any) (metav1.Object, error) {
	return meta.Accessor(obj)
}

// EnqueueKey adds the namespace/name key of an object (or of a deleted one) to queue.
func EnqueueKey(queue workqueue.TypedInterface[string], obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	queue.Add(key)
}

// EnqueueIfChanged skips the periodic resync's updates, whose resourceVersion is unchanged.
func EnqueueIfChanged(old, cur any, enqueue func(any)) {
	o, err1 := MetaOf(old)
	n, err2 := MetaOf(cur)
	if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
		return
	}
	enqueue(cur)
}

// SyncFailed records the Warning event on the DeploymentConfig named by key (namespace/name)
// when it failed MaxRetries times in a row.
func SyncFailed(dcs dclisters.DeploymentConfigLister, recorder record.EventRecorder, key string, err error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if dc, getErr := dcs.DeploymentConfigs(ns).Get(name); getErr == nil {
		recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventSyncFailed, v1alpha1.MsgSyncFailed, err)
	}
}

// StripManagedFields is the informers' transform: it drops metadata.managedFields, which
// no controller reads, before an object enters a cache. Every server-side write adds an
// entry there, so on pods and ReplicaSets it is often the largest part of the object,
// and the caches are most of the controller's memory. An Update of a copy without
// managedFields leaves the apiserver's record as it is (an absent list is not a change).
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
