// Command stagehand-controller runs Stagehand's watch controllers: the DeploymentConfig,
// deployer-pod and image-trigger controllers (docs/controller.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/controller"
	"github.com/stagehand-dev/stagehand/controller/deferpolicy"
	"github.com/stagehand-dev/stagehand/controller/executionhook"
	"github.com/stagehand-dev/stagehand/controller/imagetrigger"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/internal/logging"
	"github.com/stagehand-dev/stagehand/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, showVersion, err := loadConfig(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stagehand-controller:", err)
		return 2
	}
	if showVersion {
		fmt.Println(version.String("stagehand-controller"))
		return 0
	}
	log, err := newLogger(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stagehand-controller:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runController(ctx, cfg, log); err != nil {
		log.WithError(err).Error("The controller stopped")
		return 1
	}
	log.Info("Stopped cleanly")
	return 0
}

func newLogger(cfg config) (*logrus.Entry, error) {
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	if cfg.LogFormat == "json" {
		logger.SetFormatter(&logrus.JSONFormatter{})
	}
	level, err := logrus.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	logger.SetLevel(level)
	logrus.SetFormatter(logger.Formatter) // the event broadcaster logs through the standard logger
	logrus.SetLevel(level)
	entry := logrus.NewEntry(logger).WithField("component", "stagehand-controller")
	logging.RouteKlog(entry) // client-go's klog lines, in the same format; for the process's life
	return entry, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if c, err := rest.InClusterConfig(); err == nil {
		return c, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // $KUBECONFIG, then ~/.kube/config
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func runController(ctx context.Context, cfg config, log *logrus.Entry) error {
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	rc.UserAgent = "stagehand-controller/" + version.Version
	limit := decideClientLimit(float64(cfg.KubeAPIQPS), cfg.KubeAPIBurst, func() (bool, error) { return apiserverHasAPF(ctx, rc) })
	rc.QPS, rc.Burst = limit.QPS, limit.Burst
	if limit.QPS == 0 {
		rc.QPS = -1 // client-go: no rate limiter at all
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	stagehand, err := stagehandclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	// Events go through a client of their own, with the same limits: they are sent in the
	// background and must never hold up a rollout's requests.
	events, err := kubernetes.NewForConfig(rest.CopyConfig(rc))
	if err != nil {
		return err
	}

	reg, metrics, leader := newMetricsRegistry()

	mgr, err := controller.NewManager(kube, stagehand, controller.Options{
		Namespace: cfg.Namespace, DeployerImage: cfg.DeployerImage, DeployerResources: cfg.DeployerResources, Resync: cfg.Resync, StatusInterval: cfg.StatusInterval, Events: events,
		DCWorkers: cfg.DCWorkers, DeployerPodWorkers: cfg.DeployerPodWorkers, ImageTriggerWorkers: cfg.ImageTriggerWorkers,
		Exec: executionhook.NewPodExecutor(rc, kube), ExecutionHooks: executionhook.Options{TTL: cfg.ExecutionHookTTL},
		ExecutionHookWorkers: cfg.ExecutionHookWorkers,
		DeferWorkers:         cfg.DeferWorkers,
		Defer: deferpolicy.Options{StepTTL: cfg.DeferStepTTL, StepResources: cfg.DeferStepResources,
			EvictionHeartbeat: cfg.DeferEvictionHeartbeat},
		Triggers: imagetrigger.Options{
			Interval: cfg.ImagePollInterval, RegistryQPS: cfg.RegistryQPS, RegistryBurst: cfg.RegistryBurst,
			Insecure: insecureRegistries(cfg.InsecureRegistries),
		},
	}, metrics, log)
	if err != nil {
		return err
	}
	reg.MustRegister(mgr.RolloutPhases())
	publishCapabilities(ctx, kube, ownNamespace(cfg), mgr.EvictionAPIServed, log)
	log.WithFields(logrus.Fields{
		"version": version.Version, "namespace": cfg.Namespace, "deployerImage": cfg.DeployerImage,
		"dcWorkers": cfg.DCWorkers, "deployerPodWorkers": cfg.DeployerPodWorkers, "imageTriggerWorkers": cfg.ImageTriggerWorkers,
		"kubeAPIQPS": limit.QPS, "kubeAPIBurst": limit.Burst, "leaderElect": cfg.LeaderElect, "statusInterval": cfg.StatusInterval,
	}).Info("Starting")
	log.WithField("qps", limit.QPS).Infof("Client-side rate limit: %s", limit.Why)

	ready := readiness(cfg.LeaderElect, mgr.Ready, leader)
	if !cfg.LeaderElect {
		leader.Started() // without election this replica runs the controllers
	}
	extra := map[string]http.Handler{}
	if cfg.RegistryWebhookSecretFile != "" {
		raw, err := os.ReadFile(cfg.RegistryWebhookSecretFile)
		if err != nil {
			return fmt.Errorf("reading the registry webhook secret: %w", err)
		}
		hook, err := imagetrigger.NewRegistryWebhook(strings.TrimSpace(string(raw)), mgr.Triggers.Watcher(), log)
		if err != nil {
			return fmt.Errorf("--registry-webhook-secret-file %s: %w", cfg.RegistryWebhookSecretFile, err)
		}
		extra[imagetrigger.RegistryWebhookPath] = hook
	}
	serve := func(ctx context.Context) (<-chan struct{}, error) {
		return serveHealth(ctx, cfg.MetricsAddr, reg, ready, extra, log)
	}
	return serveWhileRunning(ctx, serve, func(ctx context.Context) error {
		if !cfg.LeaderElect {
			mgr.Run(ctx)
			return nil
		}
		// The Lease has a client of its own too: a renewal must never wait behind a busy
		// controller's requests, or the leader would lose its Lease under load.
		lease, err := kubernetes.NewForConfig(rest.CopyConfig(rc))
		if err != nil {
			return err
		}
		return runWithLeaderElection(ctx, cfg, lease, mgr.Run, leader, log)
	})
}

// serveWhileRunning serves health and metrics while run runs, and stops the server once
// run returns, for whatever reason. A leader that lost its Lease returns from run while
// the process's context is still live: the process must then exit (and come back as a
// standby), not wait for a signal with its server up and its controllers stopped.
func serveWhileRunning(ctx context.Context, serve func(context.Context) (<-chan struct{}, error), run func(context.Context) error) error {
	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	serverDone, err := serve(serverCtx)
	if err != nil {
		return err
	}
	err = run(ctx)
	stopServer()
	<-serverDone
	return err
}

// newMetricsRegistry is the registry of /metrics with every collector the process
// registers but stagehand_rollouts, which the manager's caches feed: the Go and process
// collectors, the rollout and hook metrics, the workqueue metrics (client-go's provider
// from now on: set once per process, before any queue exists), the client metrics and the
// leader gauge. No label of any of them holds a DeploymentConfig, pod, revision or
// namespace name (docs/controller.md, "Health and metrics"; metrics_test.go).
func newMetricsRegistry() (*prometheus.Registry, *plumbing.Metrics, *plumbing.LeaderStatus) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	workqueue.SetProvider(plumbing.NewWorkqueueMetricsProvider(reg))
	metrics := plumbing.NewMetrics(reg)
	plumbing.RegisterClientMetrics(reg)
	return reg, metrics, plumbing.NewLeaderStatus(reg)
}

// insecureRegistries allows plain HTTP for the listed registries and for loopback ones.
func insecureRegistries(list []string) func(string) bool {
	set := map[string]bool{}
	for _, r := range list {
		set[r] = true
	}
	return func(registry string) bool {
		host := registry
		if h, _, err := net.SplitHostPort(registry); err == nil {
			host = h
		}
		return set[registry] || host == "localhost" || net.ParseIP(host).IsLoopback()
	}
}
