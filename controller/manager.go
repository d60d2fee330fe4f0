package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	stagehandv1alpha1informers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/deferpolicy"
	"github.com/stagehand-dev/stagehand/controller/deployerpod"
	"github.com/stagehand-dev/stagehand/controller/deploymentconfig"
	"github.com/stagehand-dev/stagehand/controller/executionhook"
	"github.com/stagehand-dev/stagehand/controller/imagetrigger"
	"github.com/stagehand-dev/stagehand/controller/notify"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// Options configure the controllers of one process.
type Options struct {
	// Namespace limits the controllers to one namespace; empty means all.
	Namespace string
	// DeployerImage is the built-in strategy image run by Recreate and Rolling revisions.
	DeployerImage string
	// DeployerResources are the requests and limits of every deployer pod where its
	// strategy's resources give none.
	DeployerResources corev1.ResourceRequirements
	// Workers is the number of workers of each controller whose own count below is 0
	// (at least 1).
	Workers int
	// DCWorkers, DeployerPodWorkers and ImageTriggerWorkers are the workers of one
	// controller each; 0 means Workers.
	DCWorkers, DeployerPodWorkers, ImageTriggerWorkers int
	// Resync is the informers' resync period; 0 disables it.
	Resync time.Duration
	// StatusInterval is the least time between two status writes of one DC while its
	// latest revision rolls out; 0 writes every change at once. A final status (Complete,
	// Failed, frozen, a new latestVersion) never waits.
	StatusInterval time.Duration
	// Events, when set, is the client that sends the controllers' events. Give it a rate
	// limit of its own, so that events, which are sent asynchronously and best-effort,
	// never take the requests of a rollout; nil sends them through the main client.
	Events kubernetes.Interface
	// Triggers configure the polling of the ImageChange triggers.
	Triggers imagetrigger.Options
	// Exec runs ExecutionHooks' commands (executionhook.NewPodExecutor); nil leaves the
	// ExecutionHook controller out.
	Exec executionhook.Executor
	// ExecutionHooks configure the ExecutionHook controller.
	ExecutionHooks executionhook.Options
	// ExecutionHookWorkers are the ExecutionHook controller's workers; 0 means Workers.
	// A worker only starts a hook: the commands run in goroutines of their own.
	ExecutionHookWorkers int
	// Defer configures the DeferPolicy controller.
	Defer deferpolicy.Options
	// DeferWorkers are the DeferPolicy controller's workers; 0 means Workers.
	DeferWorkers int
}

// Manager runs the DeploymentConfig, deployer-pod and image-trigger controllers over
// shared informers.
type Manager struct {
	factories []interface {
		Start(stopCh <-chan struct{})
		Shutdown()
	}
	synced []cache.InformerSynced
	ready  atomic.Bool
	// revisions is the revision cache, for the stagehand_rollouts gauge.
	revisions appslisters.ReplicaSetLister
	workers   struct{ dcs, pods, triggers, hooks, defers, notify int }

	DeploymentConfigs *deploymentconfig.Controller
	DeployerPods      *deployerpod.Controller
	Triggers          *imagetrigger.Controller
	// ExecutionHooks is nil without Options.Exec.
	ExecutionHooks *executionhook.Controller
	// Defer runs DeferPolicies.
	Defer *deferpolicy.Controller
	// EvictionAPIServed says whether the apiserver served the EvictionRequest API at the
	// start: Defer then answers evictions (BeforeEviction).
	EvictionAPIServed bool
	// Notify sends RolloutNotifiers' events (docs/notifications.md).
	Notify *notify.Controller
}

// NewManager builds the informers (filtered to what the controllers need) and the controllers.
func NewManager(kube kubernetes.Interface, stagehand stagehandclient.Interface, opts Options, metrics *plumbing.Metrics, log *logrus.Entry) (*Manager, error) {
	if opts.DeployerImage == "" {
		return nil, fmt.Errorf("no deployer image configured")
	}
	kubeFactory := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, informers.WithNamespace(opts.Namespace),
			informers.WithTweakListOptions(tweak), informers.WithTransform(plumbing.StripManagedFields))
	}
	revisions := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.ConfigLabel })
	deployerPods := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = revision.DeployerPods().String() })
	access := kubeFactory(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", v1alpha1.DeployerServiceAccountName).String()
	})
	dcs := stagehandinformers.NewSharedInformerFactoryWithOptions(stagehand, opts.Resync,
		stagehandinformers.WithNamespace(opts.Namespace), stagehandinformers.WithTransform(plumbing.StripManagedFields))
	// Every pod a DeferPolicy may select, and the step pods; caching the deployer and hook
	// pods twice cost the controller tens of MiB with 1,000 DCs rolling. Its Node informer
	// serves the deployer-pod controller too.
	allPods := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.DeferControllerPods().String() })

	// The records of StatefulSet revisions, stored as their ReplicaSet views.
	statefulRevisions := informers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = plumbing.StatefulRevisionSelector }),
		informers.WithTransform(plumbing.StatefulRevisionView))
	inf := plumbing.Informers{
		StatefulRevisions: statefulRevisions.Apps().V1().ControllerRevisions().Informer(),
		DeploymentConfigs: dcs.Stagehand().V1alpha1().DeploymentConfigs(),
		ReplicaSets:       revisions.Apps().V1().ReplicaSets(),
		StatefulSets:      revisions.Apps().V1().StatefulSets(),
		DeployerPods:      deployerPods.Core().V1().Pods(),
		ServiceAccounts:   access.Core().V1().ServiceAccounts(),
		RoleBindings:      access.Rbac().V1().RoleBindings(),
		DeferPolicies:     dcs.Stagehand().V1alpha1().DeferPolicies(),
		Nodes:             allPods.Core().V1().Nodes(),
	}
	dcController, err := deploymentconfig.NewController(kube, stagehand, inf, metrics, log)
	if err != nil {
		return nil, err
	}
	dcController.SpaceStatusWrites(opts.StatusInterval)
	podController, err := deployerpod.NewController(kube, inf, deployerpod.Defaults{Image: opts.DeployerImage, Resources: opts.DeployerResources}, metrics, log)
	if err != nil {
		return nil, err
	}
	triggerController, err := imagetrigger.NewController(kube, stagehand, inf, opts.Triggers, log)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		revisions:         inf.Revisions(),
		DeploymentConfigs: dcController,
		DeployerPods:      podController,
		Triggers:          triggerController,
	}
	if opts.Events != nil {
		dcController.SendEventsWith(opts.Events)
		podController.SendEventsWith(opts.Events)
		triggerController.SendEventsWith(opts.Events)
	}
	m.workers.dcs = workerCount(opts.DCWorkers, opts.Workers)
	m.workers.pods = workerCount(opts.DeployerPodWorkers, opts.Workers)
	m.workers.triggers = workerCount(opts.ImageTriggerWorkers, opts.Workers)
	m.workers.hooks = workerCount(opts.ExecutionHookWorkers, opts.Workers)
	if opts.Exec != nil {
		hooks, actions := dcs.Stagehand().V1alpha1().ExecutionHooks(), dcs.Stagehand().V1alpha1().HookActions()
		m.ExecutionHooks, err = executionhook.NewController(kube, stagehand, opts.Exec, hooks, actions, opts.ExecutionHooks, metrics, log)
		if err != nil {
			return nil, err
		}
		if opts.Events != nil {
			m.ExecutionHooks.SendEventsWith(opts.Events)
		}
		m.synced = append(m.synced, hooks.Informer().HasSynced, actions.Informer().HasSynced)
	}
	if err := m.addDefer(kube, stagehand, allPods, dcs.Stagehand().V1alpha1().DeferPolicies(), inf, opts, metrics, log); err != nil {
		return nil, err
	}
	hookPods := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.HookStageLabel }) // for HookFailed only
	if err := m.addNotify(kube, stagehand, inf, notify.Informers{
		Notifiers: dcs.Stagehand().V1alpha1().RolloutNotifiers(), Receipts: dcs.Stagehand().V1alpha1().RolloutDeliveries(),
		HookPods: hookPods.Core().V1().Pods(), Pods: allPods.Core().V1().Pods(), ExecutionHooks: dcs.Stagehand().V1alpha1().ExecutionHooks(),
	}, opts, metrics, log); err != nil {
		return nil, err
	}
	m.synced = append(m.synced, allPods.Core().V1().Pods().Informer().HasSynced, allPods.Core().V1().Nodes().Informer().HasSynced,
		dcs.Stagehand().V1alpha1().DeferPolicies().Informer().HasSynced)
	m.factories = append(m.factories, revisions, statefulRevisions, deployerPods, access, dcs, allPods, hookPods)
	for _, i := range []cache.SharedIndexInformer{inf.DeploymentConfigs.Informer(), inf.ReplicaSets.Informer(), inf.StatefulRevisions, inf.StatefulSets.Informer(),
		inf.DeployerPods.Informer(), inf.ServiceAccounts.Informer(), inf.RoleBindings.Informer()} {
		m.synced = append(m.synced, i.HasSynced)
	}
	return m, nil
}

// addDefer wires the DeferPolicy controller over the pods and Nodes of allPods, the
// DeferPolicies and the revisions' workloads, and makes it an eviction responder where it
// can be.
func (m *Manager) addDefer(kube kubernetes.Interface, stagehand stagehandclient.Interface, allPods informers.SharedInformerFactory,
	policies stagehandv1alpha1informers.DeferPolicyInformer, inf plumbing.Informers, opts Options, metrics *plumbing.Metrics, log *logrus.Entry) error {
	m.workers.defers = workerCount(opts.DeferWorkers, opts.Workers)
	var err error
	m.Defer, err = deferpolicy.NewController(kube, stagehand, allPods.Core().V1().Pods(), allPods.Core().V1().Nodes(),
		policies, inf.ReplicaSets, inf.StatefulSets, opts.Defer, metrics, log)
	if err != nil {
		return err
	}
	if opts.Events != nil {
		m.Defer.SendEventsWith(opts.Events)
	}
	return m.addEvictions(kube, opts, log)
}

// addEvictions makes the DeferPolicy controller an eviction responder (BeforeEviction)
// where the apiserver serves the EvictionRequest API (lifecycle.k8s.io/v1alpha1, 1.37
// alpha). Elsewhere a BeforeEviction policy is not Ready, and says why.
func (m *Manager) addEvictions(kube kubernetes.Interface, opts Options, log *logrus.Entry) error {
	served, err := plumbing.Serves(kube.Discovery(), lifecyclev1alpha1.SchemeGroupVersion.String(), "evictionrequests", "evictions")
	if err != nil {
		log.WithError(err).Warn("could not tell whether the EvictionRequest API is served; BeforeEviction DeferPolicies stay inactive")
	}
	m.EvictionAPIServed = served
	if !served {
		return nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, informers.WithNamespace(opts.Namespace),
		informers.WithTransform(plumbing.StripManagedFields))
	requests, evictions := f.Lifecycle().V1alpha1().EvictionRequests(), f.Lifecycle().V1alpha1().Evictions()
	if err := m.Defer.WithEvictions(requests, evictions); err != nil {
		return err
	}
	m.factories = append(m.factories, f)
	m.synced = append(m.synced, requests.Informer().HasSynced, evictions.Informer().HasSynced)
	log.Info("the EvictionRequest API is served: BeforeEviction DeferPolicies respond to evictions")
	return nil
}

// addNotify wires the RolloutNotifier controller over the shared informers.
func (m *Manager) addNotify(kube kubernetes.Interface, stagehand stagehandclient.Interface, inf plumbing.Informers,
	own notify.Informers, opts Options, metrics *plumbing.Metrics, log *logrus.Entry) error {
	m.workers.notify = workerCount(0, opts.Workers)
	c, err := notify.NewController(kube, stagehand, inf, own, metrics, log)
	if err != nil {
		return err
	}
	if opts.Events != nil {
		c.SendEventsWith(opts.Events)
	}
	m.Notify = c
	m.synced = append(m.synced, own.Synced()...)
	return nil
}

// workerCount is own when set, else all, and at least 1.
func workerCount(own, all int) int {
	if own > 0 {
		return own
	}
	return max(all, 1)
}

// Ready reports whether the caches have synced, for /readyz.
func (m *Manager) Ready() bool { return m.ready.Load() }

// RolloutPhases is the collector of the stagehand_rollouts{phase} gauge over the revision
// cache; it reports once the caches have synced.
func (m *Manager) RolloutPhases() prometheus.Collector {
	return plumbing.NewRolloutPhases(m.revisions, m.Ready)
}

// Run starts the informers and every controller, and blocks until ctx is done and the
// controllers have stopped.
func (m *Manager) Run(ctx context.Context) {
	for _, f := range m.factories {
		f.Start(ctx.Done())
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.DeploymentConfigs.Run(ctx, m.workers.dcs) })
	wg.Go(func() { m.DeployerPods.Run(ctx, m.workers.pods) })
	wg.Go(func() { m.Triggers.Run(ctx, m.workers.triggers) })
	if m.ExecutionHooks != nil {
		wg.Go(func() { m.ExecutionHooks.Run(ctx, m.workers.hooks) })
	}
	wg.Go(func() { m.Defer.Run(ctx, m.workers.defers) })
	wg.Go(func() { m.Notify.Run(ctx, m.workers.notify) })
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), m.synced...) {
			m.ready.Store(true)
		}
	})
	<-ctx.Done()
	wg.Wait()
	for _, f := range m.factories {
		f.Shutdown()
	}
}
