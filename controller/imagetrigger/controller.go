package imagetrigger

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/images"
)

// QueueName names the image-trigger controller's queue in the metrics.
const QueueName = "imagetrigger"

// Controller runs the ImageChange triggers. It hands every watched tag of every
// DC to an images.Watcher, which polls each unique tag once for all its watchers; when a
// tag resolves to a new digest, it pins the digest into the DC's containers (automatic
// triggers) and records it in the status. The DeploymentConfig controller then sees the
// template change and starts the revision. It never creates revisions itself.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface

	dcLister dclisters.DeploymentConfigLister
	dcSynced cache.InformerSynced

	watcher  *images.Watcher
	recheck  time.Duration // how soon a DC with a failing tag reads its credentials again
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *logrus.Entry
	loop     *plumbing.Loop

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// Options configure the polling of the ImageChange triggers.
type Options struct {
	// Interval between two checks of a tag; 0 means the images package's default (60 s).
	Interval time.Duration
	// RegistryQPS and RegistryBurst limit the requests to each registry.
	RegistryQPS   float64
	RegistryBurst int
	// Insecure reports whether a registry may be reached over plain HTTP.
	Insecure func(registry string) bool
}

// NewController wires the controller to the DeploymentConfig informer.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf plumbing.Informers,
	opts Options, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-imagetrigger-controller")
	c := &Controller{
		kube:      kube,
		stagehand: stagehand,
		dcLister:  inf.DeploymentConfigs.Lister(),
		dcSynced:  inf.DeploymentConfigs.Informer().HasSynced,
		queue:     plumbing.NewQueue(QueueName),
		recorder:  recorder,
		log:       log.WithField("controller", QueueName),
		recheck:   opts.Interval,
	}
	if c.recheck <= 0 {
		c.recheck = time.Minute
	}
	resolver := images.NewResolver(images.ResolverOptions{
		RegistryQPS: opts.RegistryQPS, RegistryBurst: opts.RegistryBurst, Insecure: opts.Insecure,
		UserAgent: "stagehand-controller",
	})
	// The watcher calls back from its pollers; the queue never blocks.
	c.watcher = images.NewWatcher(images.WatcherOptions{Interval: opts.Interval, Resolver: resolver}, c.queue.Add)
	c.syncHandler = c.syncTriggers
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync:   func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		GiveUp: func(key string, err error) { plumbing.SyncFailed(c.dcLister, c.recorder, key, err) },
		Synced: []cache.InformerSynced{c.dcSynced},
		Start:  c.watcher.Run,
	}

	_, err := inf.DeploymentConfigs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.enqueueIfSpecChanged,
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("adding an event handler: %w", err)
	}
	return c, nil
}

// Watcher is the watcher of the registry tags, for a push webhook that wants to poke it.
func (c *Controller) Watcher() *images.Watcher { return c.watcher }

// SendEventsWith sends the controller's events through events instead of the client it
// was built with, so that they have a rate limit of their own (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts the workers, and the watcher once the cache has synced, and blocks until
// ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) enqueue(obj any) { plumbing.EnqueueKey(c.queue, obj) }

// enqueueIfSpecChanged skips the updates that leave the spec alone (metadata.generation),
// such as the DeploymentConfig controller's status writes: the triggers depend only on
// the spec and on the watcher, whose results arrive through its own callback. Each sync
// reads the pull secrets from the apiserver, so this keeps those reads to spec changes.
func (c *Controller) enqueueIfSpecChanged(old, cur any) {
	o, err1 := plumbing.MetaOf(old)
	n, err2 := plumbing.MetaOf(cur)
	if err1 == nil && err2 == nil && o.GetGeneration() == n.GetGeneration() && n.GetDeletionTimestamp() == nil {
		return
	}
	c.enqueue(cur)
}
