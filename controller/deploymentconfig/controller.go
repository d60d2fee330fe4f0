package deploymentconfig

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// QueueName names the DeploymentConfig controller's queue in the metrics.
const QueueName = "deploymentconfig"

// Controller turns DeploymentConfigs into revisions: it triggers new
// revisions, supersedes running ones, scales revisions once a rollout ended, prunes old
// ones and reports the status. It never runs a rollout itself; the deployer pod does.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface

	dcLister dclisters.DeploymentConfigLister
	dcSynced cache.InformerSynced
	rsLister appslisters.ReplicaSetLister
	rsSynced cache.InformerSynced
	// stsLister holds the StatefulSets of DCs with spec.statefulSet; nil in tests without.
	stsLister appslisters.StatefulSetLister
	podLister corelisters.PodLister
	podSynced cache.InformerSynced
	saLister  corelisters.ServiceAccountLister
	saSynced  cache.InformerSynced
	rbLister  rbaclisters.RoleBindingLister
	rbSynced  cache.InformerSynced
	// deferLister is nil without DeferPolicies: scale-downs are then never deferred.
	deferLister dclisters.DeferPolicyLister

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	metrics  *plumbing.Metrics
	log      *logrus.Entry
	loop     *plumbing.Loop

	// dcWrites and rsWrites remember the versions that this controller's own writes of
	// DC status and of revisions replaced, so that a sync never acts on a cache that is
	// behind them (see plumbing.OwnWrites).
	dcWrites, rsWrites plumbing.OwnWrites

	// access remembers the deployer ServiceAccounts and RoleBindings that this controller
	// made sure of, while its informers lag behind (rbac.go).
	access accessMemo

	// pace spaces the status writes of a rollout in progress (statuspace.go).
	pace *statusPace

	// refusals remembers, per DC key, the revision whose ReplicaSet the apiserver refused,
	// until the status says so: the cache may not have seen that status write yet.
	refusals sync.Map

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewController wires the controller to its informers.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf plumbing.Informers,
	metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-deploymentconfig-controller")
	c := &Controller{
		kube:      kube,
		stagehand: stagehand,
		dcLister:  inf.DeploymentConfigs.Lister(),
		dcSynced:  inf.DeploymentConfigs.Informer().HasSynced,
		rsLister:  inf.Revisions(),
		rsSynced:  inf.RevisionsSynced,
		podLister: inf.DeployerPods.Lister(),
		podSynced: inf.DeployerPods.Informer().HasSynced,
		saLister:  inf.ServiceAccounts.Lister(),
		saSynced:  inf.ServiceAccounts.Informer().HasSynced,
		rbLister:  inf.RoleBindings.Lister(),
		rbSynced:  inf.RoleBindings.Informer().HasSynced,
		queue:     plumbing.NewQueue(QueueName),
		recorder:  recorder,
		metrics:   metrics,
		log:       log.WithField("controller", QueueName),
		pace:      newStatusPace(DefaultStatusInterval),
	}
	if inf.DeferPolicies != nil {
		c.deferLister = inf.DeferPolicies.Lister()
	}

	c.syncHandler = c.syncDeploymentConfig
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync:   func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		GiveUp: func(key string, err error) { plumbing.SyncFailed(c.dcLister, c.recorder, key, err) },
		Synced: []cache.InformerSynced{c.dcSynced, c.rsSynced, c.podSynced, c.saSynced, c.rbSynced},
	}

	informers := inf.RevisionInformers()
	if inf.StatefulSets != nil {
		c.stsLister = inf.StatefulSets.Lister()
		informers = append(informers, inf.StatefulSets.Informer())
		c.loop.Synced = append(c.loop.Synced, inf.StatefulSets.Informer().HasSynced)
	}

	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{inf.DeploymentConfigs.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(old, cur any) { plumbing.EnqueueIfChanged(old, cur, c.enqueue) },
			DeleteFunc: c.enqueue,
		}},
		{inf.DeployerPods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueConfigOf,
			UpdateFunc: func(old, cur any) { plumbing.EnqueueIfChanged(old, cur, c.enqueueConfigOf) },
			DeleteFunc: c.enqueueConfigOf,
		}},
		{inf.ServiceAccounts.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.accessDeleted("ServiceAccount")}},
		{inf.RoleBindings.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.accessDeleted("RoleBinding")}},
	}
	for _, informer := range informers {
		handlers = append(handlers, struct {
			informer cache.SharedIndexInformer
			handler  cache.ResourceEventHandler
		}{informer, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwner,
			UpdateFunc: func(old, cur any) { plumbing.EnqueueIfChanged(old, cur, c.enqueueOwner) },
			DeleteFunc: c.enqueueOwner,
		}})
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, fmt.Errorf("adding an event handler: %w", err)
		}
	}
	return c, nil
}

// SpaceStatusWrites sets the least time between two status writes of one DC while its
// latest revision rolls out; 0 writes every change at once.
func (c *Controller) SpaceStatusWrites(interval time.Duration) { c.pace = newStatusPace(interval) }

// SendEventsWith sends the controller's events through events instead of the client it
// was built with, so that they have a rate limit of their own (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) enqueue(obj any) { plumbing.EnqueueKey(c.queue, obj) }

// gatherDelay is how long a change of a revision or of a deployer pod waits before it
// syncs its DC. One rollout changes them many times within a second (phase annotations,
// the ReplicaSet controller's replica counts, the deployer's scaling, the pod's phases),
// and each change would otherwise be one status write of the DC; the delaying queue keeps
// one pending sync per DC, so the changes of the window make one write. A change of the
// DC itself (a new template: a rollout to start) is never delayed.
var gatherDelay = 500 * time.Millisecond

// enqueueOwner enqueues the DC that controls a revision, after gatherDelay.
func (c *Controller) enqueueOwner(obj any) {
	switch o := plumbing.UnwrapTombstone(obj).(type) {
	case *appsv1.ReplicaSet:
		if name := revision.OwnerConfig(o); name != "" {
			c.queue.AddAfter(o.Namespace+"/"+name, gatherDelay)
		}
	case *appsv1.StatefulSet:
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == revision.ConfigKind.Kind {
			c.queue.AddAfter(o.Namespace+"/"+ref.Name, gatherDelay)
		}
	}
}

// enqueueConfigOf enqueues the DC of a deployer pod, after gatherDelay.
func (c *Controller) enqueueConfigOf(obj any) {
	pod, ok := plumbing.UnwrapTombstone(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if name := pod.Labels[v1alpha1.ConfigLabel]; name != "" {
		c.queue.AddAfter(pod.Namespace+"/"+name, gatherDelay)
	}
}

// accessDeleted handles the deletion of a deployer ServiceAccount or RoleBinding: the
// controller forgets that it made sure of it, and syncs the namespace's DCs, which create
// it again.
func (c *Controller) accessDeleted(kind string) func(obj any) {
	return func(obj any) {
		if m, err := plumbing.MetaOf(plumbing.UnwrapTombstone(obj)); err == nil {
			c.access.forget(m.GetNamespace(), kind)
		}
		c.enqueueNamespace(obj)
	}
}

// enqueueNamespace enqueues every DC of the namespace of a deleted ServiceAccount or
// RoleBinding, so the deployer's access is recreated.
func (c *Controller) enqueueNamespace(obj any) {
	m, err := plumbing.MetaOf(plumbing.UnwrapTombstone(obj))
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
