package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// DeploymentConfigQueueName names the DeploymentConfig controller's queue in the metrics.
const DeploymentConfigQueueName = "deploymentconfig"

// DeploymentConfigController turns DeploymentConfigs into revisions: it triggers new
// revisions, supersedes running ones, scales revisions once a rollout ended, prunes old
// ones and reports the status. It never runs a rollout itself; the deployer pod does.
type DeploymentConfigController struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface

	dcLister  dclisters.DeploymentConfigLister
	dcSynced  cache.InformerSynced
	rsLister  appslisters.ReplicaSetLister
	rsSynced  cache.InformerSynced
	podLister corelisters.PodLister
	podSynced cache.InformerSynced
	saLister  corelisters.ServiceAccountLister
	saSynced  cache.InformerSynced
	rbLister  rbaclisters.RoleBindingLister
	rbSynced  cache.InformerSynced

	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	metrics     *Metrics
	log         *logrus.Entry

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewDeploymentConfigController wires the controller to its informers.
func NewDeploymentConfigController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf Informers,
	metrics *Metrics, log *logrus.Entry) (*DeploymentConfigController, error) {
	broadcaster, recorder := newRecorder("stagehand-deploymentconfig-controller")
	c := &DeploymentConfigController{
		kube:      kube,
		stagehand: stagehand,
		dcLister:  inf.DeploymentConfigs.Lister(),
		dcSynced:  inf.DeploymentConfigs.Informer().HasSynced,
		rsLister:  inf.ReplicaSets.Lister(),
		rsSynced:  inf.ReplicaSets.Informer().HasSynced,
		podLister: inf.DeployerPods.Lister(),
		podSynced: inf.DeployerPods.Informer().HasSynced,
		saLister:  inf.ServiceAccounts.Lister(),
		saSynced:  inf.ServiceAccounts.Informer().HasSynced,
		rbLister:  inf.RoleBindings.Lister(),
		rbSynced:  inf.RoleBindings.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: DeploymentConfigQueueName}),
		broadcaster: broadcaster,
		recorder:    recorder,
		metrics:     metrics,
		log:         log.WithField("controller", DeploymentConfigQueueName),
	}
	c.syncHandler = c.syncDeploymentConfig

	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{inf.DeploymentConfigs.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(old, cur any) { enqueueIfChanged(old, cur, c.enqueue) },
			DeleteFunc: c.enqueue,
		}},
		{inf.ReplicaSets.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwner,
			UpdateFunc: func(old, cur any) { enqueueIfChanged(old, cur, c.enqueueOwner) },
			DeleteFunc: c.enqueueOwner,
		}},
		{inf.DeployerPods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueConfigOf,
			UpdateFunc: func(old, cur any) { enqueueIfChanged(old, cur, c.enqueueConfigOf) },
			DeleteFunc: c.enqueueConfigOf,
		}},
		{inf.ServiceAccounts.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueNamespace}},
		{inf.RoleBindings.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueNamespace}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, fmt.Errorf("adding an event handler: %w", err)
		}
	}
	return c, nil
}

// Run starts workers and blocks until ctx is done.
func (c *DeploymentConfigController) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()

	startRecording(c.broadcaster, c.kube)
	defer c.broadcaster.Shutdown()

	c.log.Info("Starting the DeploymentConfig controller")
	defer c.log.Info("Stopped the DeploymentConfig controller")
	if !cache.WaitForNamedCacheSync(DeploymentConfigQueueName, ctx.Done(), c.dcSynced, c.rsSynced, c.podSynced, c.saSynced, c.rbSynced) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *DeploymentConfigController) worker(ctx context.Context) {
	for processNextItem(ctx, c.queue, c.log, c.syncHandler, c.giveUp) {
	}
}

// giveUp turns an error that outlived its retries into a Warning event on the DC.
func (c *DeploymentConfigController) giveUp(key string, err error) {
	syncFailed(c.dcLister, c.recorder, key, err)
}

func (c *DeploymentConfigController) enqueue(obj any) { enqueueKey(c.queue, obj) }

// syncFailed records the Warning event of a DC key whose retries ran out.
func syncFailed(dcs dclisters.DeploymentConfigLister, recorder record.EventRecorder, key string, err error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if dc, getErr := dcs.DeploymentConfigs(ns).Get(name); getErr == nil {
		recorder.Eventf(dc, corev1.EventTypeWarning, EventSyncFailed, MsgSyncFailed, err)
	}
}

// enqueueKey adds the namespace/name key of an object (or of a deleted one) to queue.
func enqueueKey(queue workqueue.TypedInterface[string], obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	queue.Add(key)
}

// enqueueIfChanged skips the periodic resync's updates, whose resourceVersion is unchanged.
func enqueueIfChanged(old, cur any, enqueue func(any)) {
	o, err1 := metaOf(old)
	n, err2 := metaOf(cur)
	if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
		return
	}
	enqueue(cur)
}

// enqueueOwner enqueues the DC that controls a revision.
func (c *DeploymentConfigController) enqueueOwner(obj any) {
	rs, ok := unwrapTombstone(obj).(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == dcKind.Kind && ref.APIVersion == dcKind.GroupVersion().String() {
		c.queue.Add(rs.Namespace + "/" + ref.Name)
	}
}

// enqueueConfigOf enqueues the DC of a deployer pod.
func (c *DeploymentConfigController) enqueueConfigOf(obj any) {
	pod, ok := unwrapTombstone(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if name := pod.Labels[v1alpha1.ConfigLabel]; name != "" {
		c.queue.Add(pod.Namespace + "/" + name)
	}
}

// enqueueNamespace enqueues every DC of the namespace of a deleted ServiceAccount or
// RoleBinding, so the deployer's access is recreated.
func (c *DeploymentConfigController) enqueueNamespace(obj any) {
	m, err := metaOf(unwrapTombstone(obj))
	if err != nil {
		return
	}
	dcs, err := c.dcLister.DeploymentConfigs(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, dc := range dcs {
		c.queue.Add(dc.Namespace + "/" + dc.Name)
	}
}
