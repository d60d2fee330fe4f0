// Package deferpolicy is the DeferPolicy controller. For the pods that an AfterTermination
// policy selects, it keeps the finalizer stagehand.dev/defer and, once such a pod is
// deleted and its containers have stopped, runs the policy's steps as pods on the same
// node, one after another, then removes the finalizer. For a BeforeScaleDown policy it
// runs the steps for the pods that a ReplicaSet's scale-down will remove, while they still
// run, and lowers the replicas afterwards. Each run is recorded on its pod (annotation
// stagehand.dev/defer-run), so that a restarted controller resumes where it was. See
// docs/defer.md.
package deferpolicy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	lifecyclelisters "k8s.io/client-go/listers/lifecycle/v1alpha1"
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
const QueueName = "deferpolicy"

// The queue's keys are "<kind>/<namespace>/<name>".
const (
	kindPod    = "pod"
	kindPolicy = "policy"
	kindRS     = "rs"
	kindSet    = "sts"
	kindStep   = "step"
	kindEvict  = "evict" // named by the pod
)

// byNode indexes pods by spec.nodeName, to find the pods of a lost node.
const byNode = "byNode"

// Options configure the DeferPolicy controller.
type Options struct {
	// StepTTL keeps a finished step's pod this long; 0 means DefaultStepTTL.
	StepTTL time.Duration
	// StepResources are the default requests and limits of a step pod's container, for
	// each resource a step does not set itself; empty sets none. The binary's defaults
	// are DefaultStepResources.
	StepResources corev1.ResourceRequirements
	// EvictionHeartbeat is the interval of the BeforeEviction responder's heartbeats; 0
	// means DefaultEvictionHeartbeat, and less than MinEvictionHeartbeat is raised to it.
	EvictionHeartbeat time.Duration
}

// Controller runs DeferPolicies.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	pods      corelisters.PodLister
	podIndex  cache.Indexer
	nodes     corelisters.NodeLister
	policies  listers.DeferPolicyLister
	rsets     appslisters.ReplicaSetLister
	sets      appslisters.StatefulSetLister          // nil without a StatefulSet informer
	requests  lifecyclelisters.EvictionRequestLister // nil where the API is not served
	evictions lifecyclelisters.EvictionLister        // nil where the API is not served
	heartbeat time.Duration
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	metrics   *plumbing.Metrics
	log       *logrus.Entry
	loop      *plumbing.Loop
	now       func() time.Time
	stepTTL   time.Duration

	stepResources corev1.ResourceRequirements

	// deletions remembers, by pod UID, how this process first saw each pod being
	// deleted: the grace period, and whether its containers still ran. A run record on
	// the pod makes it durable; this only covers the moments before the record is written.
	mu        sync.Mutex
	deletions map[types.UID]deletionSeen

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewController wires the controller to its informers: every pod, the Nodes, the
// DeferPolicies, the revisions' ReplicaSets and the DCs' StatefulSets (sets may be nil).
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface,
	pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	policies informers.DeferPolicyInformer, rsets appsinformers.ReplicaSetInformer,
	sets appsinformers.StatefulSetInformer,
	opts Options, metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-defer-controller")
	c := &Controller{
		kube: kube, stagehand: stagehand,
		pods: pods.Lister(), podIndex: pods.Informer().GetIndexer(),
		nodes: nodes.Lister(), policies: policies.Lister(), rsets: rsets.Lister(),
		queue: plumbing.NewQueue(QueueName), recorder: recorder, metrics: metrics,
		log: log.WithField("controller", QueueName), now: time.Now,
		deletions: map[types.UID]deletionSeen{}, stepTTL: opts.StepTTL,
		stepResources: opts.StepResources, heartbeat: heartbeatOf(opts.EvictionHeartbeat),
	}
	if c.stepTTL <= 0 {
		c.stepTTL = DefaultStepTTL
	}
	c.syncHandler = c.sync
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync: func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		Synced: []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced,
			policies.Informer().HasSynced, rsets.Informer().HasSynced},
	}
	if err := pods.Informer().AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("adding the node index: %w", err)
	}
	handlers := []plumbing.Handler{
		{Informer: pods.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.podChanged(nil, obj) },
			UpdateFunc: c.podChanged,
			DeleteFunc: c.podDeleted,
		}},
		{Informer: nodes.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, cur any) { c.nodeChanged(cur) },
			DeleteFunc: c.nodeChanged,
		}},
		{Informer: policies.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.policyChanged,
			UpdateFunc: func(_, cur any) { c.policyChanged(cur) },
			DeleteFunc: c.policyChanged,
		}},
		{Informer: rsets.Informer(), Handler: plumbing.OnAddOrUpdate(c.rsChanged)},
	}
	if sets != nil {
		c.sets = sets.Lister()
		c.loop.Synced = append(c.loop.Synced, sets.Informer().HasSynced)
		handlers = append(handlers, plumbing.Handler{Informer: sets.Informer(), Handler: plumbing.OnAddOrUpdate(c.setChanged)})
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

func (c *Controller) addAfter(kind, namespace, name string, d time.Duration) {
	c.queue.AddAfter(plumbing.KindKey(kind, namespace, name), d)
}

// podChanged enqueues a pod that may need the controller: one that a policy could select,
// one with a run, and, for a step's pod, the pod it runs for. It also remembers the grace
// period of a deletion when it is first seen.
func (c *Controller) podChanged(old, cur any) {
	pod, ok := cur.(*corev1.Pod)
	if !ok {
		return
	}
	if _, ok := pod.Labels[v1alpha1.DeferStepOfLabel]; ok {
		if target := v1alpha1.DeferStepFor(pod); target != "" {
			c.add(kindPod, pod.Namespace, target)
		}
		c.add(kindStep, pod.Namespace, pod.Name)
		return
	}
	c.evictionPodChanged(pod)
	policies, err := c.policies.DeferPolicies(pod.Namespace).List(everything)
	if err != nil {
		policies = nil
	}
	if len(policies) == 0 && !v1alpha1.HasDeferFinalizer(pod) && !v1alpha1.HasDeferRun(pod) {
		return // nothing here concerns DeferPolicies: most pods of most namespaces
	}
	if pod.DeletionTimestamp != nil && v1alpha1.HasDeferFinalizer(pod) {
		c.mu.Lock()
		if _, seen := c.deletions[pod.UID]; !seen {
			first := deletionSeen{grace: -1} // unknown
			if oldPod, ok := old.(*corev1.Pod); ok && oldPod.DeletionTimestamp == nil && pod.DeletionGracePeriodSeconds != nil {
				// The deletion's own write changes no status: the containers ran at
				// the deletion if they run in this copy.
				first = deletionSeen{grace: *pod.DeletionGracePeriodSeconds, running: !stopped(pod)}
			}
			c.deletions[pod.UID] = first
		}
		c.mu.Unlock()
	}
	c.add(kindPod, pod.Namespace, pod.Name)
	for _, p := range policies {
		if p.SelectsLabels(pod.Labels) {
			c.add(kindPolicy, p.Namespace, p.Name)
		}
	}
	if kind, name := ownerWorkload(pod); kind != "" && v1alpha1.DeferScaleDownMarkOf(pod) != "" {
		c.add(kind, pod.Namespace, name)
	}
}

func (c *Controller) podDeleted(obj any) {
	pod, ok := plumbing.UnwrapTombstone(obj).(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	delete(c.deletions, pod.UID)
	c.mu.Unlock()
	c.evictionPodChanged(pod)
	if kind, name := ownerWorkload(pod); kind != "" && v1alpha1.DeferScaleDownMarkOf(pod) != "" {
		c.add(kind, pod.Namespace, name)
	}
	for _, p := range c.policiesOf(pod) {
		c.add(kindPolicy, pod.Namespace, p)
	}
}

// deletionSeen is how this process first saw a pod's deletion start.
type deletionSeen struct {
	// grace is the deletion's grace period, -1 when unknown (the pod was first seen
	// already deleted).
	grace int64
	// running is whether the pod's containers still ran when the deletion started.
	running bool
}

// firstSeen is how this process first saw pod's deletion start; grace -1 when it does
// not know.
func (c *Controller) firstSeen(pod *corev1.Pod) deletionSeen {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.deletions[pod.UID]; ok {
		return d
	}
	return deletionSeen{grace: -1}
}

// firstSeenGrace is the deletion grace period at which this process first saw pod being
// deleted, or -1 when it does not know (it saw the pod first already deleted).
func (c *Controller) firstSeenGrace(pod *corev1.Pod) int64 { return c.firstSeen(pod).grace }

// nodeChanged enqueues the deleted pods on a Node that went away or is not Ready.
func (c *Controller) nodeChanged(obj any) {
	node, ok := plumbing.UnwrapTombstone(obj).(*corev1.Node)
	if !ok {
		return
	}
	objs, err := c.podIndex.ByIndex(byNode, node.Name)
	if err != nil {
		return
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.DeletionTimestamp != nil && v1alpha1.HasDeferFinalizer(p) {
			c.add(kindPod, p.Namespace, p.Name)
		}
	}
}

// policyChanged enqueues the policy (its status) and every pod of its namespace that may
// depend on it: pods with the finalizer or a run, and pods it selects.
func (c *Controller) policyChanged(obj any) {
	policy, ok := plumbing.UnwrapTombstone(obj).(*v1alpha1.DeferPolicy)
	if !ok {
		return
	}
	c.add(kindPolicy, policy.Namespace, policy.Name)
	pods, err := c.pods.Pods(policy.Namespace).List(everything)
	if err != nil {
		return
	}
	for _, p := range pods {
		if v1alpha1.HasDeferFinalizer(p) || v1alpha1.HasDeferRun(p) || policy.SelectsLabels(p.Labels) {
			c.add(kindPod, p.Namespace, p.Name)
		}
	}
}

// rsChanged enqueues a ReplicaSet that asks for a deferred scale-down, or that is in the
// middle of one (a choice, or chosen pods to remove).
func (c *Controller) rsChanged(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if v1alpha1.InDeferScaleDown(rs) {
		c.add(kindRS, rs.Namespace, rs.Name)
	}
}

// policiesOf names the policies recorded in pod's run, for their status counts.
func (c *Controller) policiesOf(pod *corev1.Pod) []string {
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil || run == nil {
		return nil
	}
	return []string{run.Policy}
}

// ownerWorkload is the queue kind and name of pod's controlling ReplicaSet or
// StatefulSet; "" when it has neither.
func ownerWorkload(pod *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return "", ""
	case ref.Kind == "ReplicaSet":
		return kindRS, ref.Name
	case ref.Kind == "StatefulSet":
		return kindSet, ref.Name
	}
	return "", ""
}
