package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Start-up limits per step. The whole start normally takes a few seconds; these are generous
// for a loaded 2-core CI machine.
const (
	etcdTimeout      = 30 * time.Second
	apiserverTimeout = 90 * time.Second
	componentTimeout = 60 * time.Second
	nodesTimeout     = 60 * time.Second
	// launchAttempts bounds the retries when another process took a port between the pick
	// and the bind.
	launchAttempts = 3
)

// ErrAlreadyRunning is returned by Start when the folder's pid files name live processes.
var ErrAlreadyRunning = errors.New("a local cluster is already running in this folder")

// Options configure Start. The zero value starts one node in the default folder.
type Options struct {
	// Dir is the cluster folder. Default: $STAGEHAND_LOCALCLUSTER_DIR, else <repo>/.localcluster.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	// Default: DefaultBinDir(<repo>).
	BinDir string
	// Nodes is how many Nodes the agent registers: stagehand-node-1 ... stagehand-node-N.
	// Default 1.
	Nodes int
	// ImageMap is image-map text, or the path of a file holding it.
	// Default: DefaultImageMap(<repo>).
	ImageMap string
	// Registry also starts a container registry on loopback: Debian's docker-registry behind
	// an auth proxy that protects the repositories under RegistryProtectedPrefix (see
	// Cluster.Registry). hack/install-registry.sh installs docker-registry.
	Registry bool
	// AuditLog makes the apiserver write an audit log of every request (level Metadata, as
	// JSON lines) to <Dir>/logs/audit.log; see Cluster.AuditLogPath. It costs every request
	// a synchronous write, so only measurements that read the log should ask for it.
	AuditLog bool
	// PriorityAndFairness runs the apiserver with API Priority and Fairness on, as real
	// clusters run it: it then creates the default FlowSchemas and PriorityLevelConfigurations
	// itself and queues requests by them. Off by default: one client on a one-node test
	// cluster needs no queueing; a benchmark that reports the apiserver's queues asks for it.
	PriorityAndFairness bool
	// Detach starts every process in its own session so that it outlives the caller, as
	// `stagehand-localcluster up` needs. The node agent then runs as
	// `<this executable> agent --dir <Dir>`, so only that command can detach.
	Detach bool
	// RealNode also starts a real node after the node agent's: containerd, runc and the
	// kubelet, Node RealNodeName, tainted RealNodeTaintKey (see docs/localcluster.md). It
	// needs root, Registry, hack/install-node.sh and hack/build-kubelet.sh.
	RealNode bool
	// KubeletPath is the real node's kubelet. Default: DefaultKubeletPath(<repo>).
	KubeletPath string
	// PauseImage is the real node's sandbox image in the registry. Default: DefaultPauseImage.
	PauseImage string
	// Log receives progress lines. Default: the standard logrus logger.
	Log *logrus.Entry
}

// Cluster is a running local control plane with its node agent.
type Cluster struct {
	opts       Options
	layout     layout
	state      state
	log        *logrus.Entry
	restConfig *rest.Config
	client     kubernetes.Interface
	agent      *inProcessAgent
	registry   *Registry
	nodeIP     net.IP // the real node's address (Options.RealNode), nil without one

	procMu  sync.Mutex // guards procs and stopped: RestartComponent replaces a process
	procs   []*process // in start order
	stopped bool       // Stop began: nothing starts any more

	restartMu sync.Mutex // one RestartComponent at a time
	stopOnce  sync.Once
	stopErr   error
}

// Start brings the cluster up in opts.Dir and returns once the apiserver is ready, the
// controller manager has created the default ServiceAccount, the scheduler is healthy and
// every Node is Ready. ctx bounds the start only; the cluster runs until Stop (or, when not
// detached, until this process exits). A fresh etcd is used every time; the certificates in
// <dir>/pki are reused while valid. On failure everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, layout: layout{dir: opts.Dir}, log: opts.Log}
	c.state = state{Nodes: opts.Nodes, BinDir: opts.BinDir, Detached: opts.Detach}
	began := time.Now()
	if err := c.prepare(); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			c.log.WithError(stopErr).Warn("Cleaning up after a failed start")
		}
		return nil, fmt.Errorf("starting the local cluster in %s: %w", c.layout.dir, err)
	}
	c.log.WithField("took", time.Since(began).Round(time.Millisecond)).
		WithField("kubeconfig", c.KubeconfigPath()).Info("Local cluster ready")
	return c, nil
}

func withDefaults(opts Options) (Options, error) {
	if opts.Log == nil {
		opts.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	opts.Log = opts.Log.WithField("component", "localcluster")
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.PauseImage == "" {
		opts.PauseImage = DefaultPauseImage
	}
	if opts.Dir == "" || opts.BinDir == "" || opts.ImageMap == "" || (opts.RealNode && opts.KubeletPath == "") {
		root, err := FindRepoRoot()
		if err != nil {
			return opts, err
		}
		if opts.Dir == "" {
			opts.Dir = DefaultDir(root)
		}
		if opts.BinDir == "" {
			opts.BinDir = DefaultBinDir(root)
		}
		if opts.ImageMap == "" {
			opts.ImageMap = DefaultImageMap(root)
		}
		if opts.KubeletPath == "" {
			opts.KubeletPath = DefaultKubeletPath(root)
		}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return opts, fmt.Errorf("resolving %s: %w", opts.Dir, err)
	}
	opts.Dir = dir
	return opts, nil
}

// prepare checks the binaries and the folder, and writes the certificates and the image map.
func (c *Cluster) prepare() error {
	for _, b := range []string{etcdName, apiserverName, controllerManagerName, schedulerName} {
		if _, err := os.Stat(filepath.Join(c.opts.BinDir, b)); err != nil {
			return fmt.Errorf("control-plane binary %s missing in %s (build it with hack/build-controlplane.sh): %w",
				b, c.opts.BinDir, err)
		}
	}
	if c.opts.Registry {
		if why := RegistryMissing(); why != "" {
			return errors.New(why)
		}
	}
	if c.opts.RealNode {
		if why := realNodeMissing(c.opts.KubeletPath); why != "" {
			return errors.New(why)
		}
	}
	if err := checkNotRunning(c.layout); err != nil {
		return err
	}
	removeRegistryInfo(c.layout) // left by a cluster that was killed
	if n := killPodProcesses(c.layout.dir); n > 0 {
		c.log.WithField("count", n).Warn("Killed pod processes left behind by an earlier run")
	}
	// Each start gets a fresh etcd, fresh logs and a fresh node-agent folder.
	for _, d := range []string{c.layout.etcdData(), c.layout.path("logs"), c.layout.agentDir()} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("clearing %s: %w", d, err)
		}
	}
	for _, d := range []string{c.layout.path("logs"), c.layout.path("pids"), c.layout.agentDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := ensurePKI(c.layout.pki()); err != nil {
		return fmt.Errorf("preparing certificates in %s: %w", c.layout.pki().dir, err)
	}
	if err := c.prepareRealNode(); err != nil {
		return err
	}
	return writeImageMap(c.layout, c.opts.ImageMap)
}

// checkNotRunning fails when a pid file names a live process, and removes stale ones.
func checkNotRunning(l layout) error {
	files, err := filepath.Glob(l.pidFile("*"))
	if err != nil {
		return fmt.Errorf("listing pid files: %w", err)
	}
	for _, f := range files {
		pid, alive, err := readPIDFile(f)
		if err == nil && alive {
			return fmt.Errorf("%w: %s (pid %d); run `stagehand-localcluster down --dir %s` first",
				ErrAlreadyRunning, filepath.Base(f), pid, l.dir)
		}
		_ = os.Remove(f)
	}
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	previous, _ := c.layout.readState() // keeps the apiserver port, so old kubeconfigs work
	var pp portPicker
	binary := func(name string) string { return filepath.Join(c.opts.BinDir, name) }

	if c.opts.Registry {
		r, err := startRegistry(ctx, c.layout, c.opts.Detach, &pp, c.log)
		if err != nil {
			return err
		}
		c.registry = r
		c.state.Registry = r.Address
		c.state.Ports.Registry, c.state.Ports.RegistryBackend = r.proxyPort, r.backendPort
	}

	err := c.launch(ctx, etcdName, binary(etcdName), etcdTimeout, func(int) ([]string, check, error) {
		client, err := pp.pick(0)
		if err != nil {
			return nil, nil, err
		}
		peer, err := pp.pick(0)
		if err != nil {
			return nil, nil, err
		}
		c.state.Ports.EtcdClient, c.state.Ports.EtcdPeer = client, peer
		return etcdArgs(c.layout, c.state.Ports), etcdHealthy(client), nil
	})
	if err != nil {
		return err
	}

	err = c.launch(ctx, apiserverName, binary(apiserverName), apiserverTimeout, func(attempt int) ([]string, check, error) {
		preferred := 0
		if attempt == 1 {
			preferred = previous.Ports.APIServer
		}
		port, err := pp.pick(preferred)
		if err != nil {
			return nil, nil, err
		}
		c.state.Ports.APIServer = port
		if err := c.writeKubeconfigs(); err != nil {
			return nil, nil, err
		}
		args := apiserverArgs(c.layout, c.state.Ports, c.opts.PriorityAndFairness, c.nodeIP)
		minor, err := minorVersion(filepath.Join(c.opts.BinDir, "kube-apiserver"))
		if err != nil {
			return nil, nil, err
		}
		args = append(args, alphaAPIArgs(minor)...)
		if c.opts.AuditLog {
			audit, err := auditArgs(c.layout)
			if err != nil {
				return nil, nil, err
			}
			args = append(args, audit...)
		}
		return args, apiserverReady(c.client), nil
	})
	if err != nil {
		return err
	}

	cmArgs := func(p ports) []string { return controllerManagerArgs(c.layout, p) }
	if err := c.launchComponent(ctx, controllerManagerName, &pp, &c.state.Ports.ControllerManager, cmArgs); err != nil {
		return err
	}
	schedArgs := func(p ports) []string { return schedulerArgs(c.layout, p) }
	if err := c.launchComponent(ctx, schedulerName, &pp, &c.state.Ports.Scheduler, schedArgs); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the default ServiceAccount", componentTimeout, defaultServiceAccount(c.client),
		c.procs...); err != nil {
		return err
	}

	if err := c.layout.writeState(c.state); err != nil {
		return err
	}
	if err := writeFileAtomic(c.layout.env(), []byte(EnvLines(c.layout.dir)), 0o644); err != nil {
		return err
	}
	if err := c.startAgent(ctx); err != nil || !c.opts.RealNode {
		return err
	}
	return c.startRealNode(ctx, &pp)
}

// launchComponent starts the controller manager or the scheduler and waits for its /healthz.
func (c *Cluster) launchComponent(ctx context.Context, name string, pp *portPicker, port *int,
	args func(ports) []string) error {
	binary := filepath.Join(c.opts.BinDir, name)
	return c.launch(ctx, name, binary, componentTimeout, func(int) ([]string, check, error) {
		p, err := pp.pick(0)
		if err != nil {
			return nil, nil, err
		}
		*port = p
		healthy, err := componentHealthy(c.layout.pki().caCert(), p)
		if err != nil {
			return nil, nil, err
		}
		return args(c.state.Ports), healthy, nil
	})
}

// writeKubeconfigs writes the admin kubeconfig and the components' ones for the current
// apiserver port, and the admin client.
func (c *Cluster) writeKubeconfigs() error {
	c.state.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", c.state.Ports.APIServer)
	if err := c.layout.writeKubeconfig(c.layout.kubeconfig(), c.state.APIServerURL, "admin"); err != nil {
		return err
	}
	for _, name := range []string{controllerManagerName, schedulerName} {
		if err := c.layout.writeKubeconfig(c.layout.componentKubeconfig(name), c.state.APIServerURL, name); err != nil {
			return err
		}
	}
	rc, err := loadRESTConfig(c.layout.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("building the admin client: %w", err)
	}
	c.restConfig, c.client = rc, cs
	return nil
}

// Stop ends everything Start started: the node agent first, then the control plane in
// reverse order. It waits until every process has exited, so no port stays bound. It is
// safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.agent != nil {
			errs = append(errs, c.agent.stop())
		}
		if c.registry != nil {
			errs = append(errs, c.registry.Stop())
		}
		c.procMu.Lock()
		c.stopped = true
		procs := slices.Clone(c.procs)
		c.procMu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			errs = append(errs, procs[i].stop())
		}
		killPodProcesses(c.layout.dir) // what the agent's pods started in turn
		cleanupRealNode(c.layout.dir, c.log)
		c.stopErr = errors.Join(errs...)
		if c.stopErr == nil {
			c.log.Info("Local cluster stopped")
		}
	})
	return c.stopErr
}

// KubeconfigPath is the admin kubeconfig (<dir>/kubeconfig).
func (c *Cluster) KubeconfigPath() string { return c.layout.kubeconfig() }

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Dir is the cluster folder.
func (c *Cluster) Dir() string { return c.layout.dir }

// AuditLogPath is the apiserver's audit log (JSON lines), or "" when Options.AuditLog was
// not set.
func (c *Cluster) AuditLogPath() string {
	if !c.opts.AuditLog {
		return ""
	}
	return auditLogPath(c.layout)
}

// Registry is the cluster's registry, or nil when Options.Registry was not set.
func (c *Cluster) Registry() *Registry { return c.registry }

// NodeNames are the Nodes the agent serves.
func (c *Cluster) NodeNames() []string { return nodeNames(c.state.Nodes) }
