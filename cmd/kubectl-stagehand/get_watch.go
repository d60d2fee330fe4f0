package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/tree"
)

// watch draws the tree and draws it again whenever the DC, its revisions (its ReplicaSets,
// or a StatefulSet DC's ControllerRevisions and StatefulSet), its pods, its ExecutionHooks
// or its notification receipts change, until ctx ends. With until it ends when the
// rollout it waits for ends (getUntil). The objects come from informers (a list, then a watch, each with a
// selector); nothing is polled. On a terminal a ticker redraws the cache each second, for
// the ages.
func (g *getter) watch(ctx context.Context, until bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inf, err := g.startInformers(ctx)
	if err != nil {
		return err
	}
	var tick <-chan time.Time
	if g.tty {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	var end getUntil
	for {
		o := inf.objects()
		if o == nil {
			return fmt.Errorf("deploymentconfig %q in namespace %q was deleted", g.name, g.ns)
		}
		g.print(o)
		if until {
			if done, err := end.check(o); done {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if until && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("stopped watching deploymentconfig/%s at its --timeout: %s", g.name, end.waiting(o))
			}
			return nil // interrupted, or a plain watch's --timeout
		case err := <-inf.failed:
			return err
		case <-inf.changed:
		case <-tick:
		}
	}
}

// getInformers cache the objects of one DC's tree.
type getInformers struct {
	ns, name string
	dc       cache.SharedIndexInformer
	// revisions cache the ReplicaSets, or a StatefulSet DC's ControllerRevisions.
	revisions cache.SharedIndexInformer
	set       cache.SharedIndexInformer   // a StatefulSet DC's StatefulSet, else nil
	pods      []cache.SharedIndexInformer // one for each of podLists
	execHooks cache.SharedIndexInformer   // nil when the user may not list them
	receipts  cache.SharedIndexInformer   // nil when the user may not list them
	// changed receives (coalesced) on every add, update and delete.
	changed chan struct{}
	// failed receives a watch error no retry will mend (forbidden, unauthorized).
	failed chan error
}

// startInformers reads the DC once (a missing one fails at once, not after a sync), then
// starts the informers and waits until their caches are filled.
func (g *getter) startInformers(ctx context.Context) (*getInformers, error) {
	dc, err := g.stagehand.StagehandV1alpha1().DeploymentConfigs(g.ns).Get(ctx, g.name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deploymentconfig %q not found in namespace %q", g.name, g.ns)
		}
		return nil, fmt.Errorf("reading deploymentconfig %s: %w", g.name, err)
	}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", g.name).String()
	}
	byConfig := func(o *metav1.ListOptions) { o.LabelSelector = g.byConfig().LabelSelector }
	inf := &getInformers{
		ns: g.ns, name: g.name,
		dc:      stagehandinformers.NewFilteredDeploymentConfigInformer(g.stagehand, g.ns, 0, cache.Indexers{}, byName),
		changed: make(chan struct{}, 1),
		failed:  make(chan error, 1),
	}
	if dc.Spec.StatefulSet == nil {
		inf.revisions = appsinformers.NewFilteredReplicaSetInformer(g.kube, g.ns, 0, cache.Indexers{}, byConfig)
	} else {
		inf.revisions, inf.set = g.statefulInformers()
	}
	for _, opts := range g.podLists(dc) {
		inf.pods = append(inf.pods, coreinformers.NewFilteredPodInformer(g.kube, g.ns, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = opts.LabelSelector }))
	}
	probe := g.byConfig()
	probe.Limit = 1
	if _, err := g.stagehand.StagehandV1alpha1().ExecutionHooks(g.ns).List(ctx, probe); !execHooksOptional(err) {
		inf.execHooks = stagehandinformers.NewFilteredExecutionHookInformer(g.stagehand, g.ns, 0, cache.Indexers{}, byConfig)
	}
	if _, err := g.stagehand.StagehandV1alpha1().RolloutDeliveries(g.ns).List(ctx, probe); err == nil {
		inf.receipts = stagehandinformers.NewFilteredRolloutDeliveryInformer(g.stagehand, g.ns, 0, cache.Indexers{}, byConfig)
	}
	notify := func(any) {
		select {
		case inf.changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
	var synced []cache.InformerSynced
	for _, i := range inf.all() {
		if _, err := i.AddEventHandler(handler); err != nil {
			return nil, err
		}
		_ = i.SetWatchErrorHandlerWithContext(inf.watchError)
		go i.RunWithContext(ctx)
		synced = append(synced, i.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		select {
		case err := <-inf.failed:
			return nil, err
		default:
		}
		return nil, fmt.Errorf("stopped before the watches of deploymentconfig/%s were ready: %w", g.name, ctx.Err())
	}
	return inf, nil
}

func (inf *getInformers) all() []cache.SharedIndexInformer {
	all := append([]cache.SharedIndexInformer{inf.dc, inf.revisions}, inf.pods...)
	if inf.set != nil {
		all = append(all, inf.set)
	}
	for _, optional := range []cache.SharedIndexInformer{inf.execHooks, inf.receipts} {
		if optional != nil {
			all = append(all, optional)
		}
	}
	return all
}

// watchError ends the watch on an error that retrying does not mend, and leaves the
// others to the informer's own retries.
func (inf *getInformers) watchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		select {
		case inf.failed <- fmt.Errorf("watching deploymentconfig/%s: %w", inf.name, err):
		default:
		}
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// objects are the cached objects, or nil once the DC is gone.
func (inf *getInformers) objects() *tree.Objects {
	obj, exists, err := inf.dc.GetStore().GetByKey(inf.ns + "/" + inf.name)
	if err != nil || !exists {
		return nil
	}
	o := &tree.Objects{DC: obj.(*v1alpha1.DeploymentConfig)}
	for _, x := range inf.revisions.GetStore().List() {
		if rs := revisionOf(x); rs != nil {
			o.ReplicaSets = append(o.ReplicaSets, rs)
		}
	}
	if inf.set != nil {
		if x, exists, err := inf.set.GetStore().GetByKey(inf.ns + "/" + inf.name); err == nil && exists {
			o.StatefulSet = x.(*appsv1.StatefulSet)
		}
	}
	var lists [][]*corev1.Pod
	for _, pods := range inf.pods {
		var list []*corev1.Pod
		for _, x := range pods.GetStore().List() {
			list = append(list, x.(*corev1.Pod))
		}
		lists = append(lists, list)
	}
	o.Pods = mergePods(lists)
	if inf.execHooks != nil {
		for _, x := range inf.execHooks.GetStore().List() {
			o.ExecutionHooks = append(o.ExecutionHooks, x.(*v1alpha1.ExecutionHook))
		}
	}
	if inf.receipts != nil {
		for _, x := range inf.receipts.GetStore().List() {
			o.Receipts = append(o.Receipts, x.(*v1alpha1.RolloutDelivery))
		}
	}
	return o
}
