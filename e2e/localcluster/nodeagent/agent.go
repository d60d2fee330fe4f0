package nodeagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const (
	defaultRestartBackoff    = time.Second
	defaultMaxRestartBackoff = 5 * time.Minute
	// shutdownGrace is how long processes get between SIGTERM and SIGKILL when Run returns.
	shutdownGrace = 2 * time.Second
	// workerExitTimeout bounds the wait for pod goroutines when Run returns.
	workerExitTimeout = 10 * time.Second
)

// Agent is the running node agent; Run creates and drives one.
type Agent struct {
	cfg                     Config
	client                  kubernetes.Interface
	log                     *logrus.Entry
	address                 string
	caData                  []byte
	bootID                  string
	spawner                 *spawner
	backoffBase, backoffMax time.Duration

	nodes map[string]*node // by name; fixed by New

	mu       sync.Mutex
	ctx      context.Context // Run's; nil until Run starts
	stopping bool
	workers  map[types.UID]*podWorker
	byName   map[string]*podWorker  // namespace/name -> newest worker of that name
	finished map[types.UID]struct{} // workers that ended; ignored until the pod's delete event
	running  sync.WaitGroup         // podWorker.run goroutines
}

// Run registers the nodes, serves their kubelet endpoints and runs the pods bound to them
// until ctx is done. When it returns, every process it started has been stopped. The
// Nodes and their pods are left in the API.
func Run(ctx context.Context, cfg Config) error {
	a, err := New(cfg)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// Run is the package's Run for an agent that New made, so that its caller can inject node
// faults (StopNode, StartNode, LoseNode) while it runs. It runs once.
func (a *Agent) Run(ctx context.Context) error {
	cfg := a.cfg
	cert, err := tls.LoadX509KeyPair(cfg.ServingCertFile, cfg.ServingKeyFile)
	if err != nil {
		return fmt.Errorf("loading the node serving certificate: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	if a.ctx != nil {
		a.mu.Unlock()
		cancel()
		return errors.New("node agent: Run was already called")
	}
	a.ctx = ctx
	a.spawner = newSpawner()
	a.mu.Unlock()
	var servers []*nodeServer
	var bg sync.WaitGroup
	defer func() {
		cancel()
		bg.Wait()
		for _, s := range servers {
			s.shutdown()
		}
		a.shutdown()
	}()

	for _, name := range cfg.NodeNames {
		s, err := a.startServer(name, cert)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		if err := a.registerNode(ctx, name, s.port); err != nil {
			return err
		}
		a.log.WithFields(logrus.Fields{"node": name, "port": s.port}).Info("node registered")
		n := a.nodes[name]
		n.begin(ctx, s.port)
		bg.Add(1)
		go func() {
			defer bg.Done()
			a.heartbeat(ctx, n)
		}()
		if err := a.watchPods(ctx, name, &bg); err != nil {
			return err
		}
	}
	<-ctx.Done()
	a.log.Info("node agent stopping")
	return nil
}

// New checks cfg and prepares an agent; Run drives it.
func New(cfg Config) (*Agent, error) {
	if cfg.RESTConfig == nil {
		return nil, errors.New("node agent: RESTConfig is required")
	}
	if len(cfg.NodeNames) == 0 {
		return nil, errors.New("node agent: at least one node name is required")
	}
	if cfg.Dir == "" {
		return nil, errors.New("node agent: Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("node agent folder: %w", err)
	}
	cfg.Dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "pods"), 0o755); err != nil {
		return nil, fmt.Errorf("creating node agent folder: %w", err)
	}
	a := &Agent{
		cfg:         cfg,
		log:         cfg.Log,
		address:     cfg.Address,
		bootID:      newID()[:32],
		backoffBase: cfg.RestartBackoff,
		backoffMax:  cfg.MaxRestartBackoff,
		workers:     map[types.UID]*podWorker{},
		byName:      map[string]*podWorker{},
		finished:    map[types.UID]struct{}{},
		nodes:       map[string]*node{},
	}
	for _, name := range cfg.NodeNames {
		a.nodes[name] = &node{name: name, gate: newNodeGate()}
	}
	if a.log == nil {
		a.log = logrus.NewEntry(logrus.StandardLogger())
	}
	a.log = a.log.WithField("component", "nodeagent")
	if a.address == "" {
		a.address = "127.0.0.1"
	}
	if a.backoffBase <= 0 {
		a.backoffBase = defaultRestartBackoff
	}
	if a.backoffMax <= 0 {
		a.backoffMax = defaultMaxRestartBackoff
	}
	if a.caData, err = caBundle(cfg.RESTConfig); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg.RESTConfig)
	rc.UserAgent = "stagehand-nodeagent"
	// Thousands of simulated pods mean thousands of status writes.
	rc.QPS, rc.Burst = 500, 1000
	if a.client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("node agent client: %w", err)
	}
	return a, nil
}

// watchPods starts an informer for the pods bound to node.
func (a *Agent) watchPods(ctx context.Context, node string, bg *sync.WaitGroup) error {
	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.podChanged(obj) },
		UpdateFunc: func(_, obj any) { a.podChanged(obj) },
		DeleteFunc: a.podRemoved,
	})
	if err != nil {
		return fmt.Errorf("watching pods of node %s: %w", node, err)
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		inf.RunWithContext(ctx)
	}()
	if !cache.WaitForNamedCacheSync("nodeagent-"+node, ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watching pods of node %s: %w", node, context.Cause(ctx))
	}
	return nil
}

func (a *Agent) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	if w, ok := a.workers[pod.UID]; ok {
		a.mu.Unlock()
		w.setPod(pod)
		return
	}
	n := a.nodes[pod.Spec.NodeName] // the informers only list pods of these nodes
	if _, done := a.finished[pod.UID]; done || a.stopping || n == nil {
		a.mu.Unlock()
		return
	}
	w := newPodWorker(a, pod, n.gate)
	a.workers[pod.UID] = w
	a.byName[pod.Namespace+"/"+pod.Name] = w
	a.running.Add(1)
	ctx := a.ctx
	a.mu.Unlock()
	go func() {
		defer a.running.Done()
		w.run(ctx)
	}()
}

func (a *Agent) podRemoved(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	w := a.workers[pod.UID]
	delete(a.finished, pod.UID)
	a.mu.Unlock()
	if w != nil {
		w.markRemoved()
	}
}

// forget drops a worker whose run ended.
func (a *Agent) forget(w *podWorker) {
	pod := w.latest()
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.workers, pod.UID)
	key := pod.Namespace + "/" + pod.Name
	if a.byName[key] == w {
		delete(a.byName, key)
	}
	select {
	case <-w.removed:
	default:
		a.finished[pod.UID] = struct{}{}
	}
}

// shutdown stops every process and waits (bounded) for the pod goroutines to end.
func (a *Agent) shutdown() {
	a.mu.Lock()
	a.stopping = true
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		workers = append(workers, w)
	}
	a.mu.Unlock()
	if a.spawner != nil {
		a.spawner.stop(shutdownGrace)
	}
	done := make(chan struct{})
	go func() {
		a.running.Wait()
		for _, w := range workers {
			w.wg.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(workerExitTimeout):
		a.log.Warn("some pod goroutines did not end in time")
	}
}
