// Package executionhook is the ExecutionHook controller: it runs a HookAction's command
// in running containers through pods/exec, all at once up to a hook's parallelism,
// retries each container with exponential back-off until the action's timeout, stops a
// command whose time ran out, records every container's outcome in the hook's status
// and deletes finished hooks after their TTL. See docs/exec-hooks.md.
package executionhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	informers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	listers "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// QueueName names the controller's queue in the metrics.
const QueueName = "executionhook"

// MaxContainers bounds the containers one hook selects, so that its status stays far
// below the apiserver's object size limit (see v1alpha1.EntryTextBounds).
const MaxContainers = v1alpha1.MaxExecutionHookContainers

// Options configure the ExecutionHook controller.
type Options struct {
	// TTL deletes a finished hook this long after it finished, unless the hook sets
	// ttlSecondsAfterFinished; 0 keeps finished hooks.
	TTL time.Duration
}

// Controller runs ExecutionHooks.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	exec      Executor
	hooks     listers.ExecutionHookLister
	actions   listers.HookActionLister
	ttl       time.Duration
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	metrics   *plumbing.Metrics
	log       *logrus.Entry
	loop      *plumbing.Loop

	mu   sync.Mutex
	ctx  context.Context // the controller's: runs live as long as it
	runs map[string]*run // by namespace/name

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewController wires the controller to the ExecutionHook and HookAction informers.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, exec Executor,
	hooks informers.ExecutionHookInformer, actions informers.HookActionInformer,
	opts Options, metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-executionhook-controller")
	c := &Controller{
		kube: kube, stagehand: stagehand, exec: exec,
		hooks: hooks.Lister(), actions: actions.Lister(), ttl: opts.TTL,
		queue: plumbing.NewQueue(QueueName), recorder: recorder, metrics: metrics,
		log:  log.WithField("controller", QueueName),
		runs: map[string]*run{}, ctx: context.Background(),
	}
	c.syncHandler = c.sync
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync:   func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		Synced: []cache.InformerSynced{hooks.Informer().HasSynced, actions.Informer().HasSynced},
	}
	_, err := hooks.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(old, cur any) { plumbing.EnqueueIfChanged(old, cur, c.enqueue) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("adding an event handler: %w", err)
	}
	return c, nil
}

// SendEventsWith sends the controller's events through events (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts the workers and blocks until ctx is done. The hooks' runs stop with it;
// their commands go on in the containers, and the next leader runs them again where an
// outcome was not recorded (at-least-once).
func (c *Controller) Run(ctx context.Context, workers int) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	c.loop.Run(ctx, workers)
}

func (c *Controller) enqueue(obj any) { plumbing.EnqueueKey(c.queue, obj) }

// running reports whether a run of key is in progress in this process.
func (c *Controller) running(key string) bool {
	r := c.runOf(key)
	if r == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

func (c *Controller) runOf(key string) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

// ensureRun starts a run of a Running hook unless one runs (or its last one ended
// before the hook's outcome was written, then it starts again from the status).
func (c *Controller) ensureRun(key string, hook *v1alpha1.ExecutionHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.runs[key]; ok {
		select {
		case <-r.done:
		default:
			return
		}
	}
	parent := c.ctx
	r := c.start(parent, hook)
	c.runs[key] = r
	go func() {
		<-r.done
		c.mu.Lock()
		if c.runs[key] == r {
			delete(c.runs, key)
		}
		c.mu.Unlock()
		if parent.Err() == nil && r.snapshot().Status.CompletionTime == nil {
			c.queue.AddAfter(key, time.Second) // resume from what was written
		}
	}()
}

// stopRun stops the run of a deleted hook, and its commands.
func (c *Controller) stopRun(key string) {
	c.mu.Lock()
	r := c.runs[key]
	delete(c.runs, key)
	c.mu.Unlock()
	if r != nil {
		r.stop()
	}
}
