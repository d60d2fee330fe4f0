package notify

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
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
)

// QueueName names the notifier controller's queue.
const QueueName = "notify"

// The queue's keys are "<kind>/<namespace>/<name>": a DC whose events to detect, or a
// delivery to send.
const (
	kindConfig   = "dc"
	kindDelivery = "delivery"
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

// NewController wires the controller to the DC and revision informers it shares with the
// DC controller, and to the notifiers' and receipts' own.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf plumbing.Informers,
	notifiers informers.RolloutNotifierInformer, receipts informers.RolloutDeliveryInformer,
	metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-notifier")
	c := &Controller{
		kube: kube, stagehand: stagehand,
		dcs: inf.DeploymentConfigs.Lister(), revs: inf.Revisions(),
		notifiers: notifiers.Lister(), receipts: receipts.Lister(),
		queue: plumbing.NewQueue(QueueName), recorder: recorder, metrics: metrics,
		log: log.WithField("controller", QueueName), http: &http.Client{}, now: time.Now,
		attemptTimeout: 10 * time.Second,
	}
	c.syncHandler = c.sync
	synced := []cache.InformerSynced{inf.DeploymentConfigs.Informer().HasSynced, inf.RevisionsSynced,
		notifiers.Informer().HasSynced, receipts.Informer().HasSynced}
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube, Synced: synced,
		Sync: func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
	}
	byRevision := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.revisionChanged,
		UpdateFunc: func(_, cur any) { c.revisionChanged(cur) },
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{inf.DeploymentConfigs.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.configChanged,
			UpdateFunc: func(_, cur any) { c.configChanged(cur) },
		}},
		{notifiers.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.notifierChanged,
			UpdateFunc: func(_, cur any) { c.notifierChanged(cur) },
		}},
		{receipts.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.receiptChanged,
			UpdateFunc: func(_, cur any) { c.receiptChanged(cur) },
		}},
	}
	for _, i := range inf.RevisionInformers() {
		handlers = append(handlers, struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandler
		}{i, byRevision})
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("adding an event handler: %w", err)
		}
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

// notifierChanged enqueues every DC of the notifier's namespace.
func (c *Controller) notifierChanged(obj any) {
	n, ok := obj.(*v1alpha1.RolloutNotifier)
	if !ok {
		return
	}
	dcs, err := c.dcs.DeploymentConfigs(n.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, dc := range dcs {
		c.add(kindConfig, dc.Namespace, dc.Name)
	}
}

// receiptChanged enqueues a delivery that is not done.
func (c *Controller) receiptChanged(obj any) {
	d, ok := obj.(*v1alpha1.RolloutDelivery)
	if ok && d.Status.Phase != v1alpha1.DeliveryDelivered && d.Status.Phase != v1alpha1.DeliveryFailed {
		c.add(kindDelivery, d.Namespace, d.Name)
	}
}

func (c *Controller) anyNotifier(namespace string) bool {
	list, err := c.notifiers.RolloutNotifiers(namespace).List(labels.Everything())
	return err == nil && len(list) > 0
}

// sync dispatches a key.
func (c *Controller) sync(ctx context.Context, key string) error {
	kind, ns, name, err := plumbing.SplitKindKey(key)
	if err != nil {
		return err
	}
	switch kind {
	case kindConfig:
		return c.syncConfig(ctx, ns, name)
	case kindDelivery:
		return c.syncDelivery(ctx, ns, name)
	}
	return plumbing.Fatal(fmt.Errorf("unknown key kind in %q", key))
}
