package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	dclisters "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/images"
)

// TriggerQueueName names the image-trigger controller's queue in the metrics.
const TriggerQueueName = "imagetrigger"

// TriggerController runs the ImageChange triggers. It hands every watched tag of every
// DC to an images.Watcher, which polls each unique tag once for all its watchers; when a
// tag resolves to a new digest, it pins the digest into the DC's containers (automatic
// triggers) and records it in the status. The DeploymentConfig controller then sees the
// template change and starts the revision. It never creates revisions itself.
type TriggerController struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface

	dcLister dclisters.DeploymentConfigLister
	dcSynced cache.InformerSynced

	watcher     *images.Watcher
	recheck     time.Duration // how soon a DC with a failing tag reads its credentials again
	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	log         *logrus.Entry

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// TriggerOptions configure the polling of the ImageChange triggers.
type TriggerOptions struct {
	// Interval between two checks of a tag; 0 means the images package's default (60 s).
	Interval time.Duration
	// RegistryQPS and RegistryBurst limit the requests to each registry.
	RegistryQPS   float64
	RegistryBurst int
	// Insecure reports whether a registry may be reached over plain HTTP.
	Insecure func(registry string) bool
}

// NewTriggerController wires the controller to the DeploymentConfig informer.
func NewTriggerController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf Informers,
	opts TriggerOptions, log *logrus.Entry) (*TriggerController, error) {
	broadcaster, recorder := newRecorder("stagehand-imagetrigger-controller")
	c := &TriggerController{
		kube:      kube,
		stagehand: stagehand,
		dcLister:  inf.DeploymentConfigs.Lister(),
		dcSynced:  inf.DeploymentConfigs.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: TriggerQueueName}),
		broadcaster: broadcaster,
		recorder:    recorder,
		log:         log.WithField("controller", TriggerQueueName),
		recheck:     opts.Interval,
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
func (c *TriggerController) Watcher() *images.Watcher { return c.watcher }

// Run starts the watcher and the workers, and blocks until ctx is done.
func (c *TriggerController) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()

	startRecording(c.broadcaster, c.kube)
	defer c.broadcaster.Shutdown()

	c.log.Info("Starting the image-trigger controller")
	defer c.log.Info("Stopped the image-trigger controller")
	if !cache.WaitForNamedCacheSync(TriggerQueueName, ctx.Done(), c.dcSynced) {
		return
	}
	go c.watcher.Run(ctx)
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *TriggerController) worker(ctx context.Context) {
	for processNextItem(ctx, c.queue, c.log, c.syncHandler, c.giveUp) {
	}
}

func (c *TriggerController) giveUp(key string, err error) {
	syncFailed(c.dcLister, c.recorder, key, err)
}

func (c *TriggerController) enqueue(obj any) { enqueueKey(c.queue, obj) }

// enqueueIfSpecChanged skips the updates that leave the spec alone (metadata.generation),
// such as the DeploymentConfig controller's status writes: the triggers depend only on
// the spec and on the watcher, whose results arrive through its own callback. Each sync
// reads the pull secrets from the apiserver, so this keeps those reads to spec changes.
func (c *TriggerController) enqueueIfSpecChanged(old, cur any) {
	o, err1 := metaOf(old)
	n, err2 := metaOf(cur)
	if err1 == nil && err2 == nil && o.GetGeneration() == n.GetGeneration() && n.GetDeletionTimestamp() == nil {
		return
	}
	c.enqueue(cur)
}
