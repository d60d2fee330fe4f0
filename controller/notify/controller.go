package notify

import (
	"context"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	informers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	listers "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// QueueName names the notifier controller's queue.
const QueueName = "notify"

// The queue's keys are "<kind>/<namespace>/<name>": a DC whose events to detect, or a
// delivery to send.
const (
	kindConfig   = "dc"
	kindDelivery = "delivery"
	kindNotifier = "notifier"
)

// Controller sends the events of RolloutNotifiers (docs/notifications.md). It runs on the
// leader only, as every controller of the manager does; the receipts make a new leader
// send nothing twice.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	dcs       listers.DeploymentConfigLister
	revs      appslisters.ReplicaSetLister
	notifiers listers.RolloutNotifierLister
	receipts  listers.RolloutDeliveryLister
	failures  failureSources
	judged    judgedTimes
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	metrics   *plumbing.Metrics
	log       *logrus.Entry
	loop      *plumbing.Loop
	http      *http.Client
	now       func() time.Time
	// attemptTimeout bounds one POST.
	attemptTimeout time.Duration

	syncHandler func(ctx context.Context, key string) error
}

// Informers are the notifier controller's own caches, beside the DC and revision
// informers it shares with the DC controller.
type Informers struct {
	Notifiers informers.RolloutNotifierInformer
	Receipts  informers.RolloutDeliveryInformer
	// HookPods are the hook pods; Pods the pods a DeferPolicy may select, which hold the
	// DC's own (the DeferPolicy controller's informer); ExecutionHooks every
	// ExecutionHook. They tell of failed hooks and steps (failures.go).
	HookPods       coreinformers.PodInformer
	Pods           coreinformers.PodInformer
	ExecutionHooks informers.ExecutionHookInformer
}

// Synced are the informers' HasSynced.
func (i Informers) Synced() []cache.InformerSynced {
	return []cache.InformerSynced{i.Notifiers.Informer().HasSynced, i.Receipts.Informer().HasSynced,
		i.HookPods.Informer().HasSynced, i.Pods.Informer().HasSynced, i.ExecutionHooks.Informer().HasSynced}
}

// NewController wires the controller to the DC and revision informers it shares with the
// DC controller, and to its own.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf plumbing.Informers, own Informers,
	metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-notifier")
	c := &Controller{
		kube: kube, stagehand: stagehand,
		dcs: inf.DeploymentConfigs.Lister(), revs: inf.Revisions(),
		notifiers: own.Notifiers.Lister(), receipts: own.Receipts.Lister(),
		failures: failureSources{hookPods: own.HookPods.Lister(), pods: own.Pods.Lister(), execHooks: own.ExecutionHooks.Lister()},
		queue:    plumbing.NewQueue(QueueName), recorder: recorder, metrics: metrics,
		log: log.WithField("controller", QueueName), http: &http.Client{}, now: time.Now,
		attemptTimeout: 10 * time.Second,
	}
	c.syncHandler = c.sync
	synced := append([]cache.InformerSynced{inf.DeploymentConfigs.Informer().HasSynced, inf.RevisionsSynced}, own.Synced()...)
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube, Synced: synced,
		Sync: func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
	}
	handlers := []plumbing.Handler{
		{Informer: inf.DeploymentConfigs.Informer(), Handler: plumbing.OnAddOrUpdate(c.configChanged)},
		{Informer: own.Notifiers.Informer(), Handler: plumbing.OnAddOrUpdate(c.notifierChanged)},
		{Informer: own.Receipts.Informer(), Handler: plumbing.OnAddOrUpdate(c.receiptChanged)},
		{Informer: own.HookPods.Informer(), Handler: plumbing.OnAddOrUpdate(c.failureChanged)},
		{Informer: own.Pods.Informer(), Handler: plumbing.OnAddOrUpdate(c.failureChanged)},
		{Informer: own.ExecutionHooks.Informer(), Handler: plumbing.OnAddOrUpdate(c.execHookChanged)},
	}
	for _, i := range inf.RevisionInformers() {
		handlers = append(handlers, plumbing.Handler{Informer: i, Handler: plumbing.OnAddOrUpdate(c.revisionChanged)})
	}
	if err := plumbing.AddHandlers(handlers...); err != nil {
		return nil, err
	}
	return c, nil
}

// SendEventsWith sends the controller's events through events (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts the workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) add(kind, namespace, name string) {
	c.queue.Add(plumbing.KindKey(kind, namespace, name))
}

// configChanged enqueues a DC that a notifier of its namespace may select (its frozen
// status, for one).
func (c *Controller) configChanged(obj any) {
	if dc, ok := obj.(*v1alpha1.DeploymentConfig); ok && c.anyNotifier(dc.Namespace) {
		c.add(kindConfig, dc.Namespace, dc.Name)
	}
}

// revisionChanged enqueues the DC of a revision whose state changed.
func (c *Controller) revisionChanged(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if name := rs.Labels[v1alpha1.ConfigLabel]; name != "" && c.anyNotifier(rs.Namespace) {
		c.add(kindConfig, rs.Namespace, name)
	}
}

// failureChanged enqueues the DC of a hook pod or a defer step pod that failed, or of a
// pod whose defer run records a failed step.
func (c *Controller) failureChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := pod.Labels[v1alpha1.ConfigLabel]
	if _, step := pod.Labels[v1alpha1.DeferStepOfLabel]; step {
		name = deferstep.TargetLabels(pod)[v1alpha1.ConfigLabel]
	}
	if name == "" || (pod.Status.Phase != corev1.PodFailed && !v1alpha1.HasDeferRun(pod)) || !c.anyNotifier(pod.Namespace) {
		return
	}
	c.add(kindConfig, pod.Namespace, name)
}

// execHookChanged enqueues the DCs of a failed ExecutionHook: a lifecycle hook's by its
// label, a user's by the pods it ran in.
func (c *Controller) execHookChanged(obj any) {
	h, ok := obj.(*v1alpha1.ExecutionHook)
	if !ok || h.Status.Phase != v1alpha1.ExecutionHookFailed || !c.anyNotifier(h.Namespace) {
		return
	}
	if name := h.Labels[v1alpha1.ConfigLabel]; name != "" {
		c.add(kindConfig, h.Namespace, name)
		return
	}
	for _, st := range h.Status.HookStatuses {
		if pod, err := c.failures.pods.Pods(h.Namespace).Get(st.PodName); err == nil && pod.Labels[v1alpha1.ConfigLabel] != "" {
			c.add(kindConfig, h.Namespace, pod.Labels[v1alpha1.ConfigLabel])
		}
	}
}

// notifierChanged enqueues the notifier, for its status, and every DC of its namespace.
func (c *Controller) notifierChanged(obj any) {
	n, ok := obj.(*v1alpha1.RolloutNotifier)
	if !ok {
		return
	}
	c.add(kindNotifier, n.Namespace, n.Name)
	dcs, err := c.dcs.DeploymentConfigs(n.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, dc := range dcs {
		c.add(kindConfig, dc.Namespace, dc.Name)
	}
}

// receiptChanged enqueues a delivery that is not done, and its notifier, whose status
// counts it.
func (c *Controller) receiptChanged(obj any) {
	d, ok := obj.(*v1alpha1.RolloutDelivery)
	if !ok {
		return
	}
	c.add(kindNotifier, d.Namespace, d.Spec.Notifier)
	if d.Status.Phase != v1alpha1.DeliveryDelivered && d.Status.Phase != v1alpha1.DeliveryFailed {
		c.add(kindDelivery, d.Namespace, d.Name)
	}
}

func (c *Controller) anyNotifier(namespace string) bool {
	list, err := c.notifiers.RolloutNotifiers(namespace).List(labels.Everything())
	return err == nil && len(list) > 0
}

// sync dispatches a key.
func (c *Controller) sync(ctx context.Context, key string) error {
	return plumbing.DispatchKindKey(ctx, key, map[string]plumbing.KindSync{
		kindConfig: c.syncConfig, kindDelivery: c.syncDelivery, kindNotifier: c.syncNotifier})
}
