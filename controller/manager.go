package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/deployerpod"
	"github.com/stagehand-dev/stagehand/controller/deploymentconfig"
	"github.com/stagehand-dev/stagehand/controller/imagetrigger"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// Options configure the controllers of one process.
type Options struct {
	// Namespace limits the controllers to one namespace; empty means all.
	Namespace string
	// DeployerImage is the built-in strategy image run by Recreate and Rolling revisions.
	DeployerImage string
	// Workers is the number of workers of each controller.
	Workers int
	// Resync is the informers' resync period; 0 disables it.
	Resync time.Duration
	// Triggers configure the polling of the ImageChange triggers.
	Triggers imagetrigger.Options
}

// Manager runs the DeploymentConfig, deployer-pod and image-trigger controllers over
// shared informers.
type Manager struct {
	factories []interface {
		Start(stopCh <-chan struct{})
		Shutdown()
	}
	synced  []cache.InformerSynced
	ready   atomic.Bool
	workers int

	DeploymentConfigs *deploymentconfig.Controller
	DeployerPods      *deployerpod.Controller
	Triggers          *imagetrigger.Controller
}

// NewManager builds the informers (filtered to what the controllers need) and the controllers.
func NewManager(kube kubernetes.Interface, stagehand stagehandclient.Interface, opts Options, metrics *plumbing.Metrics, log *logrus.Entry) (*Manager, error) {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.DeployerImage == "" {
		return nil, fmt.Errorf("no deployer image configured")
	}
	kubeFactory := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(kube, opts.Resync,
			informers.WithNamespace(opts.Namespace), informers.WithTweakListOptions(tweak))
	}
	revisions := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.ConfigLabel })
	deployerPods := kubeFactory(func(o *metav1.ListOptions) { o.LabelSelector = revision.DeployerPods().String() })
	access := kubeFactory(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", v1alpha1.DeployerServiceAccountName).String()
	})
	dcs := stagehandinformers.NewSharedInformerFactoryWithOptions(stagehand, opts.Resync, stagehandinformers.WithNamespace(opts.Namespace))

	inf := plumbing.Informers{
		DeploymentConfigs: dcs.Stagehand().V1alpha1().DeploymentConfigs(),
		ReplicaSets:       revisions.Apps().V1().ReplicaSets(),
		DeployerPods:      deployerPods.Core().V1().Pods(),
		ServiceAccounts:   access.Core().V1().ServiceAccounts(),
		RoleBindings:      access.Rbac().V1().RoleBindings(),
	}
	dcController, err := deploymentconfig.NewController(kube, stagehand, inf, metrics, log)
	if err != nil {
		return nil, err
	}
	podController, err := deployerpod.NewController(kube, inf, opts.DeployerImage, metrics, log)
	if err != nil {
		return nil, err
	}
	triggerController, err := imagetrigger.NewController(kube, stagehand, inf, opts.Triggers, log)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		workers:           opts.Workers,
		DeploymentConfigs: dcController,
		DeployerPods:      podController,
		Triggers:          triggerController,
	}
	m.factories = append(m.factories, revisions, deployerPods, access, dcs)
	for _, i := range []cache.SharedIndexInformer{inf.DeploymentConfigs.Informer(), inf.ReplicaSets.Informer(),
		inf.DeployerPods.Informer(), inf.ServiceAccounts.Informer(), inf.RoleBindings.Informer()} {
		m.synced = append(m.synced, i.HasSynced)
	}
	return m, nil
}

// Ready reports whether the caches have synced, for /readyz.
func (m *Manager) Ready() bool { return m.ready.Load() }

// Run starts the informers and both controllers, and blocks until ctx is done and the
// controllers have stopped.
func (m *Manager) Run(ctx context.Context) {
	for _, f := range m.factories {
		f.Start(ctx.Done())
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.DeploymentConfigs.Run(ctx, m.workers) })
	wg.Go(func() { m.DeployerPods.Run(ctx, m.workers) })
	wg.Go(func() { m.Triggers.Run(ctx, m.workers) })
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
