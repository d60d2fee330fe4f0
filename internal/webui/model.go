package webui

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Model is what the dashboard knows: the DeploymentConfigs of its scope, their revisions
// (ReplicaSets, or the ControllerRevisions of StatefulSet revisions) and the pods that
// carry the config label (application, deployer and hook pods), from one informer per kind. Every browser tab reads this cache: the number of watches on the
// apiserver does not grow with the tabs.
type Model struct {
	dcs    cache.Indexer
	rss    cache.Indexer
	crs    cache.Indexer // StatefulSet revisions' records, as ReplicaSet views
	pods   cache.Indexer
	events cache.Indexer

	synced []cache.InformerSynced
	start  []func(<-chan struct{})

	mu      sync.Mutex
	version uint64
	changed chan struct{} // closed and replaced on every change
}

// NewModel wires the informers (5 watches: DCs, both kinds of revision, pods, events about DCs) of namespace ("" for all namespaces); Run starts them.
func NewModel(kube kubernetes.Interface, stagehand stagehandclient.Interface, namespace string) (*Model, error) {
	labelled := func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.ConfigLabel }
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(labelled), kubeinformers.WithTransform(stripManagedFields))
	sf := stagehandinformers.NewSharedInformerFactoryWithOptions(stagehand, 0, stagehandinformers.WithNamespace(namespace),
		stagehandinformers.WithTransform(stripManagedFields))
	// The events about DCs: the deployer records each hook attempt's start and end there,
	// and a finished hook pod is deleted, so they time the stages of past rollouts.
	ef := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("involvedObject.kind", "DeploymentConfig").String()
		}), kubeinformers.WithTransform(stripManagedFields))
	// The records of StatefulSet revisions, stored as their ReplicaSet views.
	rf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = v1alpha1.WorkloadLabel + "=" + v1alpha1.WorkloadStatefulSet
		}), kubeinformers.WithTransform(revision.RecordView))
	dcs := sf.Stagehand().V1alpha1().DeploymentConfigs().Informer()
	rss := kf.Apps().V1().ReplicaSets().Informer()
	crs := rf.Apps().V1().ControllerRevisions().Informer()
	pods := kf.Core().V1().Pods().Informer()
	events := ef.Core().V1().Events().Informer()
	m := &Model{dcs: dcs.GetIndexer(), rss: rss.GetIndexer(), crs: crs.GetIndexer(), pods: pods.GetIndexer(), events: events.GetIndexer(),
		changed: make(chan struct{}),
		synced:  []cache.InformerSynced{dcs.HasSynced, rss.HasSynced, crs.HasSynced, pods.HasSynced, events.HasSynced},
		start:   []func(<-chan struct{}){kf.Start, sf.Start, ef.Start, rf.Start}}
	if err := events.AddIndexers(cache.Indexers{byConfig: eventIndex}); err != nil {
		return nil, fmt.Errorf("adding the event index: %w", err)
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.bump() },
		UpdateFunc: func(_, _ any) { m.bump() },
		DeleteFunc: func(any) { m.bump() },
	}
	for _, inf := range []cache.SharedIndexInformer{rss, crs, pods} {
		if err := inf.AddIndexers(cache.Indexers{byConfig: configIndex}); err != nil {
			return nil, fmt.Errorf("adding the config index: %w", err)
		}
	}
	for _, inf := range []cache.SharedIndexInformer{dcs, rss, crs, pods, events} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			return nil, fmt.Errorf("adding an event handler: %w", err)
		}
	}
	return m, nil
}

// Run starts the informers and waits for their first lists.
func (m *Model) Run(ctx context.Context) error {
	for _, start := range m.start {
		start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), m.synced...) {
		return fmt.Errorf("the dashboard's caches did not sync: %w", context.Cause(ctx))
	}
	return nil
}

func (m *Model) bump() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	close(m.changed)
	m.changed = make(chan struct{})
}

// Changed returns the model's version and a channel that is closed at the next change.
func (m *Model) Changed() (uint64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, m.changed
}

// config is one DC with its revisions (oldest first) and its pods.
type config struct {
	dc     *v1alpha1.DeploymentConfig
	revs   []*appsv1.ReplicaSet
	pods   []*corev1.Pod
	events []*corev1.Event
}

// configs are the DCs of the cache, sorted by namespace and name, with their revisions
// and pods.
func (m *Model) configs() []*config {
	var out []*config
	for _, obj := range m.dcs.List() {
		if dc, ok := obj.(*v1alpha1.DeploymentConfig); ok {
			out = append(out, m.parts(dc))
		}
	}
	sortConfigs(out)
	return out
}

// config is the DC namespace/name with its revisions and pods, or nil.
func (m *Model) config(namespace, name string) *config {
	obj, found, err := m.dcs.GetByKey(namespace + "/" + name)
	if err != nil || !found {
		return nil
	}
	dc, ok := obj.(*v1alpha1.DeploymentConfig)
	if !ok {
		return nil
	}
	return m.parts(dc)
}

// parts gathers dc's revisions (oldest first) and pods from the config-label index.
func (m *Model) parts(dc *v1alpha1.DeploymentConfig) *config {
	c := &config{dc: dc}
	key := dc.Namespace + "/" + dc.Name
	revs := m.rss
	if dc.Spec.StatefulSet != nil {
		revs = m.crs
	}
	rss, _ := revs.ByIndex(byConfig, key)
	for _, obj := range rss {
		if rs, ok := obj.(*appsv1.ReplicaSet); ok && revision.ControllerUID(rs) == dc.UID {
			c.revs = append(c.revs, rs)
		}
	}
	pods, _ := m.pods.ByIndex(byConfig, key)
	for _, obj := range pods {
		if p, ok := obj.(*corev1.Pod); ok {
			c.pods = append(c.pods, p)
		}
	}
	events, _ := m.events.ByIndex(byConfig, key)
	for _, obj := range events {
		if e, ok := obj.(*corev1.Event); ok && e.InvolvedObject.UID == dc.UID {
			c.events = append(c.events, e)
		}
	}
	revision.Sort(c.revs)
	return c
}

func eventIndex(obj any) ([]string, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return []string{e.Namespace + "/" + e.InvolvedObject.Name}, nil
	}
	return nil, nil
}

// byConfig indexes revisions and pods by "<namespace>/<config label>".
const byConfig = "byConfig"

func configIndex(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if name := m.GetLabels()[v1alpha1.ConfigLabel]; name != "" {
		return []string{m.GetNamespace() + "/" + name}, nil
	}
	return nil, nil
}

// stripManagedFields drops what the dashboard never reads, to keep the cache small.
func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// now is the clock of the views; tests set it.
var now = time.Now
