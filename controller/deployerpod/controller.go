package deployerpod

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// QueueName names the deployer-pod controller's queue in the metrics.
const QueueName = "deployerpod"

// A deployer pod missing from the cache while its revision is Pending or Running is
// tolerated for podGoneTolerance requeues, podGoneRequeue apart, because the cache may
// lag; then the apiserver is asked, and a pod that is really gone fails the revision.
const (
	podGoneTolerance = 3
	podGoneRequeue   = time.Second
)

// Controller runs one deployer pod per revision and maps the pod's phase to
// the revision's phase. Its queue is keyed by the revision's ReplicaSet.
type Controller struct {
	kube kubernetes.Interface

	dcLister  dclisters.DeploymentConfigLister
	dcSynced  cache.InformerSynced
	rsLister  appslisters.ReplicaSetLister
	rsSynced  cache.InformerSynced
	podLister corelisters.PodLister
	podSynced cache.InformerSynced
	// nodeLister is nil when the controller was built without a Node informer; deployer
	// pods' nodes are then not watched (nodelost.go).
	nodeLister corelisters.NodeLister

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	metrics  *plumbing.Metrics
	log      *logrus.Entry
	loop     *plumbing.Loop

	defaults Defaults
	now      func() time.Time

	// writes remembers the versions that this controller's phase writes replaced, so that
	// a sync never acts on a revision the cache has not caught up with (plumbing.OwnWrites).
	writes plumbing.OwnWrites

	goneMu sync.Mutex
	gone   map[string]int // revision key → syncs that did not find its deployer pod

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewController wires the controller to its informers. defaults give the built-in
// strategy image and the resources of every deployer pod.
func NewController(kube kubernetes.Interface, inf plumbing.Informers, defaults Defaults,
	metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-deployerpod-controller")
	c := &Controller{
		kube:      kube,
		dcLister:  inf.DeploymentConfigs.Lister(),
		dcSynced:  inf.DeploymentConfigs.Informer().HasSynced,
		rsLister:  inf.Revisions(),
		rsSynced:  inf.RevisionsSynced,
		podLister: inf.DeployerPods.Lister(),
		podSynced: inf.DeployerPods.Informer().HasSynced,
		queue:     plumbing.NewQueue(QueueName),
		recorder:  recorder,
		metrics:   metrics,
		log:       log.WithField("controller", QueueName),
		defaults:  defaults,
		now:       time.Now,
		gone:      map[string]int{},
	}
	c.syncHandler = c.syncRevision
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync:   func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		GiveUp: c.giveUp,
		Synced: []cache.InformerSynced{c.dcSynced, c.rsSynced, c.podSynced},
	}

	for _, informer := range inf.RevisionInformers() {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueRevision,
			UpdateFunc: func(old, cur any) {
				if old.(*appsv1.ReplicaSet).ResourceVersion != cur.(*appsv1.ReplicaSet).ResourceVersion {
					c.enqueueRevision(cur)
				}
			},
			DeleteFunc: func(obj any) {
				if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
					c.forgetGone(key)
					c.writes.Forget(key)
				}
			},
		}); err != nil {
			return nil, fmt.Errorf("adding the revision handler: %w", err)
		}
	}
	if _, err := inf.DeployerPods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePodRevision,
		UpdateFunc: func(old, cur any) {
			if old.(*corev1.Pod).ResourceVersion != cur.(*corev1.Pod).ResourceVersion {
				c.enqueuePodRevision(cur)
			}
		},
		DeleteFunc: c.enqueuePodRevision,
	}); err != nil {
		return nil, fmt.Errorf("adding the pod handler: %w", err)
	}
	if inf.Nodes != nil {
		if err := c.watchNodes(inf.Nodes); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// SendEventsWith sends the controller's events through events instead of the client it
// was built with, so that they have a rate limit of their own (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// giveUp records a Warning on the DC when a revision's sync kept failing.
func (c *Controller) giveUp(key string, err error) {
	if dc, rs := c.lookup(key); dc != nil && rs != nil {
		c.recorder.Eventf(dc, corev1.EventTypeWarning, v1alpha1.EventSyncFailed, v1alpha1.MsgSyncFailed, err)
	}
}

func (c *Controller) enqueueRevision(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok || rs.Labels[v1alpha1.ConfigLabel] == "" {
		return
	}
	c.queue.Add(rs.Namespace + "/" + rs.Name)
}

func (c *Controller) enqueuePodRevision(obj any) {
	pod, ok := plumbing.UnwrapTombstone(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if rs := pod.Labels[v1alpha1.DeployerPodForLabel]; rs != "" {
		c.queue.Add(pod.Namespace + "/" + rs)
	}
}

// lookup returns the cached revision of key and its DC, or nils.
func (c *Controller) lookup(key string) (*v1alpha1.DeploymentConfig, *appsv1.ReplicaSet) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if err != nil {
		return nil, nil
	}
	ref := revision.OwnerConfig(rs)
	if ref == "" {
		return nil, rs
	}
	dc, err := c.dcLister.DeploymentConfigs(ns).Get(ref)
	if err != nil {
		return nil, rs
	}
	return dc, rs
}

func (c *Controller) countGone(key string) int {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	c.gone[key]++
	return c.gone[key]
}

func (c *Controller) forgetGone(key string) {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	delete(c.gone, key)
}
