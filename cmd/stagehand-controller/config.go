package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/controller/imagetrigger"
	"github.com/stagehand-dev/stagehand/internal/version"
)

// envPrefix is the prefix of every environment variable of the controller.
const envPrefix = "STAGEHAND"

// config is the controller's whole configuration (docs/controller.md). Each field is read
// from STAGEHAND_<NAME>, where the envconfig tag gives a name, and a flag overrides it.
type config struct {
	Kubeconfig    string `envconfig:"KUBECONFIG" desc:"kubeconfig file; empty: in-cluster, else $KUBECONFIG"`
	Namespace     string `envconfig:"NAMESPACE" desc:"watch only this namespace; empty: all"`
	DeployerImage string `envconfig:"DEPLOYER_IMAGE" desc:"built-in deployer image"`
	// DeployerRequests and DeployerLimits go to every deployer pod whose strategy's
	// resources leave them unset (docs/controller.md: measured from the bench's peak RSS).
	DeployerRequests resourceList `envconfig:"DEPLOYER_REQUESTS" default:"cpu=10m,memory=32Mi"`
	DeployerLimits   resourceList `envconfig:"DEPLOYER_LIMITS" default:"cpu=1,memory=256Mi"`
	// DeployerResources pairs the two, once checked.
	DeployerResources corev1.ResourceRequirements `ignored:"true"`
	// Workers, when set, is the worker count of every controller whose own setting is not
	// given; DCWorkers, DeployerPodWorkers and ImageTriggerWorkers are per controller.
	Workers             int `envconfig:"WORKERS"`
	DCWorkers           int `envconfig:"DC_WORKERS" default:"16"`
	DeployerPodWorkers  int `envconfig:"DEPLOYER_POD_WORKERS" default:"16"`
	ImageTriggerWorkers int `envconfig:"IMAGE_TRIGGER_WORKERS" default:"2"`
	// ExecutionHookWorkers only start hooks; the commands run in goroutines of their own.
	ExecutionHookWorkers int `envconfig:"EXECUTION_HOOK_WORKERS" default:"2"`
	// DeferWorkers move DeferPolicy runs on; a step runs as a pod, not in a worker.
	DeferWorkers int `envconfig:"DEFER_WORKERS" default:"4"`
	// DeferStepTTL keeps a finished defer step's pod, and its log, this long.
	DeferStepTTL time.Duration `envconfig:"DEFER_STEP_TTL" default:"10m"`
	// DeferEvictionHeartbeat is the interval of the BeforeEviction responder's heartbeats
	// (at least 20s, as the EvictionRequest API asks).
	DeferEvictionHeartbeat time.Duration `envconfig:"DEFER_EVICTION_HEARTBEAT" default:"1m"`
	// DeferStepRequests and DeferStepLimits go to every DeferPolicy step pod whose step
	// leaves them unset (docs/defer.md).
	DeferStepRequests resourceList `envconfig:"DEFER_STEP_REQUESTS" default:"cpu=10m,memory=16Mi"`
	DeferStepLimits   resourceList `envconfig:"DEFER_STEP_LIMITS" default:"cpu=100m,memory=64Mi"`
	// DeferStepResources pairs the two, once checked.
	DeferStepResources corev1.ResourceRequirements `ignored:"true"`
	ExecutionHookTTL   time.Duration               `envconfig:"EXECUTION_HOOK_TTL" default:"1h"`
	// KubeAPIQPS 0 (the default) leaves the limit to the apiserver's Priority and Fairness
	// where it runs, else 100/200; below 0 turns the client-side limit off (ratelimit.go).
	KubeAPIQPS   float32       `envconfig:"KUBE_API_QPS" default:"0"`
	KubeAPIBurst int           `envconfig:"KUBE_API_BURST" default:"0"`
	Resync       time.Duration `envconfig:"RESYNC" default:"10m"`
	// StatusInterval spaces a DC's status writes while its latest revision rolls out.
	StatusInterval time.Duration `envconfig:"STATUS_INTERVAL" default:"5s"`
	LeaderElect    bool          `envconfig:"LEADER_ELECT" default:"true"`
	LeaseName      string        `envconfig:"LEASE_NAME" default:"stagehand-controller"`
	LeaseNamespace string        `envconfig:"LEASE_NAMESPACE"`
	// PodName (STAGEHAND_POD_NAME, or POD_NAME from the downward API) names this replica
	// in its leader identity, <pod name>_<uuid>; empty: the hostname.
	PodName       string        `envconfig:"POD_NAME"`
	LeaseDuration time.Duration `envconfig:"LEASE_DURATION" default:"15s"`
	RenewDeadline time.Duration `envconfig:"RENEW_DEADLINE" default:"10s"`
	RetryPeriod   time.Duration `envconfig:"RETRY_PERIOD" default:"2s"`
	MetricsAddr   string        `envconfig:"METRICS_ADDR" default:":8080"`
	LogFormat     string        `envconfig:"LOG_FORMAT" default:"text"`
	LogLevel      string        `envconfig:"LOG_LEVEL" default:"info"`

	ImagePollInterval  time.Duration `envconfig:"IMAGE_POLL_INTERVAL" default:"60s"`
	RegistryQPS        float64       `envconfig:"REGISTRY_QPS" default:"1"`
	RegistryBurst      int           `envconfig:"REGISTRY_BURST" default:"5"`
	InsecureRegistries []string      `envconfig:"INSECURE_REGISTRIES"`

	RegistryWebhookSecretFile string `envconfig:"REGISTRY_WEBHOOK_SECRET_FILE"`
}

// defaultDeployerImage is the built-in deployer image of this build.
func defaultDeployerImage() string { return "stagehand/deployer:" + version.Version }

// loadConfig reads the environment, then the flags in args. It returns showVersion for
// --version.
func loadConfig(args []string) (cfg config, showVersion bool, err error) {
	if err := envconfig.Process(envPrefix, &cfg); err != nil {
		return cfg, false, fmt.Errorf("reading the environment: %w", err)
	}
	if cfg.DeployerImage == "" {
		cfg.DeployerImage = defaultDeployerImage()
	}
	fs := flag.NewFlagSet("stagehand-controller", flag.ContinueOnError)
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", cfg.Kubeconfig, "kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config")
	fs.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "watch only this namespace; empty: all namespaces")
	fs.StringVar(&cfg.DeployerImage, "deployer-image", cfg.DeployerImage, "image of the built-in deployer (Recreate and Rolling)")
	fs.Var(&cfg.DeployerRequests, "deployer-requests", "requests of every deployer pod whose spec.strategy.resources sets none, as cpu=10m,memory=32Mi (empty: none)")
	fs.Var(&cfg.DeployerLimits, "deployer-limits", "limits of every deployer pod whose spec.strategy.resources sets none, as cpu=1,memory=256Mi (empty: none)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers of every controller whose own --*-workers is not given")
	fs.IntVar(&cfg.DCWorkers, "dc-workers", cfg.DCWorkers, "workers of the DeploymentConfig controller")
	fs.IntVar(&cfg.DeployerPodWorkers, "deployer-pod-workers", cfg.DeployerPodWorkers, "workers of the deployer-pod controller")
	fs.IntVar(&cfg.ImageTriggerWorkers, "image-trigger-workers", cfg.ImageTriggerWorkers, "workers of the image-trigger controller")
	fs.DurationVar(&cfg.DeferStepTTL, "defer-step-ttl", cfg.DeferStepTTL, "how long a finished DeferPolicy step's pod (and its log) is kept")
	fs.DurationVar(&cfg.DeferEvictionHeartbeat, "defer-eviction-heartbeat", cfg.DeferEvictionHeartbeat, "interval of the BeforeEviction responder's heartbeats in an Eviction's status (at least 20s)")
	fs.Var(&cfg.DeferStepRequests, "defer-step-requests", "requests of every DeferPolicy step pod, for what its step leaves unset, as cpu=10m,memory=16Mi (empty: none)")
	fs.Var(&cfg.DeferStepLimits, "defer-step-limits", "limits of every DeferPolicy step pod, for what its step leaves unset, as cpu=100m,memory=64Mi (empty: none)")
	fs.IntVar(&cfg.DeferWorkers, "defer-workers", cfg.DeferWorkers, "workers of the DeferPolicy controller (each step runs as a pod; a worker only moves runs on)")
	fs.IntVar(&cfg.ExecutionHookWorkers, "execution-hook-workers", cfg.ExecutionHookWorkers, "workers of the ExecutionHook controller (they start hooks; the commands run concurrently anyway)")
	fs.DurationVar(&cfg.ExecutionHookTTL, "execution-hook-ttl", cfg.ExecutionHookTTL, "delete a finished ExecutionHook this long after it finished, unless it sets ttlSecondsAfterFinished (0 keeps them)")
	qps := float64(cfg.KubeAPIQPS)
	fs.Float64Var(&qps, "kube-api-qps", qps, "client-side limit of requests per second to the apiserver, all controllers together; "+
		"0: none where the apiserver runs Priority and Fairness, else 100; below 0: none")
	fs.IntVar(&cfg.KubeAPIBurst, "kube-api-burst", cfg.KubeAPIBurst, "burst of requests to the apiserver with --kube-api-qps (0: twice the QPS)")
	fs.DurationVar(&cfg.Resync, "resync", cfg.Resync, "informer resync period (0 disables)")
	fs.DurationVar(&cfg.StatusInterval, "status-interval", cfg.StatusInterval, "least time between two status writes of a DeploymentConfig while its latest revision rolls out (0: every change at once; Complete and Failed are always written at once)")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", cfg.LeaderElect, "run only while holding the leader Lease")
	fs.StringVar(&cfg.LeaseName, "leader-elect-lease-name", cfg.LeaseName, "name of the leader Lease")
	fs.StringVar(&cfg.LeaseNamespace, "leader-elect-lease-namespace", cfg.LeaseNamespace, "namespace of the leader Lease; empty: the pod's namespace, else default")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", cfg.LeaseDuration, "how long a Lease is valid without renewal")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", cfg.RenewDeadline, "how long the leader keeps trying to renew before it gives up")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", cfg.RetryPeriod, "wait between attempts to acquire or renew the Lease")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "address of /metrics, /healthz and /readyz; empty disables")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "log format: text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.ImagePollInterval, "image-poll-interval", cfg.ImagePollInterval, "how often each tag of an ImageChange trigger is checked (with 10% jitter)")
	fs.Float64Var(&cfg.RegistryQPS, "registry-qps", cfg.RegistryQPS, "requests per second to one registry, shared by every watched tag on it")
	fs.IntVar(&cfg.RegistryBurst, "registry-burst", cfg.RegistryBurst, "burst of requests to one registry")
	fs.StringVar(&cfg.RegistryWebhookSecretFile, "registry-webhook-secret-file", cfg.RegistryWebhookSecretFile,
		"file holding the shared secret of the registry push webhook ("+imagetrigger.RegistryWebhookPath+" on the metrics address); empty: no webhook")
	insecure := strings.Join(cfg.InsecureRegistries, ",")
	fs.StringVar(&insecure, "insecure-registries", insecure, "comma-separated registries (host[:port]) reached over plain HTTP; loopback registries always are")
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	cfg.KubeAPIQPS = float32(qps)
	if cfg.Workers != 0 {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, w := range []struct {
			flag, env string
			n         *int
		}{
			{"dc-workers", "DC_WORKERS", &cfg.DCWorkers},
			{"deployer-pod-workers", "DEPLOYER_POD_WORKERS", &cfg.DeployerPodWorkers},
			{"image-trigger-workers", "IMAGE_TRIGGER_WORKERS", &cfg.ImageTriggerWorkers},
			{"execution-hook-workers", "EXECUTION_HOOK_WORKERS", &cfg.ExecutionHookWorkers},
			{"defer-workers", "DEFER_WORKERS", &cfg.DeferWorkers},
		} {
			if !given[w.flag] && !envSet(w.env) {
				*w.n = cfg.Workers
			}
		}
	}
	cfg.InsecureRegistries = nil
	for _, r := range strings.Split(insecure, ",") {
		if r = strings.TrimSpace(r); r != "" {
			cfg.InsecureRegistries = append(cfg.InsecureRegistries, r)
		}
	}
	if err := cfg.check(); err != nil {
		return cfg, false, err
	}
	return cfg, showVersion, nil
}

// check refuses settings that cannot work, naming the flag, and pairs the requests and
// limits settings.
func (cfg *config) check() error {
	var err error
	if cfg.DeployerResources, err = requirements("deployer", cfg.DeployerRequests, cfg.DeployerLimits); err != nil {
		return err
	}
	if cfg.DeferStepResources, err = requirements("defer-step", cfg.DeferStepRequests, cfg.DeferStepLimits); err != nil {
		return err
	}
	if cfg.ExecutionHookTTL < 0 {
		return fmt.Errorf("--execution-hook-ttl must not be negative, not %s", cfg.ExecutionHookTTL)
	}
	if cfg.ImagePollInterval < time.Second {
		return fmt.Errorf("--image-poll-interval must be at least 1s, not %s", cfg.ImagePollInterval)
	}
	if cfg.RegistryQPS <= 0 || cfg.RegistryBurst < 1 {
		return fmt.Errorf("--registry-qps must be above 0 and --registry-burst at least 1")
	}
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, not %q", cfg.LogFormat)
	}
	if cfg.KubeAPIBurst < 0 {
		return fmt.Errorf("--kube-api-burst must not be negative, not %d (0: twice --kube-api-qps)", cfg.KubeAPIBurst)
	}
	if cfg.Workers < 0 {
		return fmt.Errorf("--workers must not be negative, not %d", cfg.Workers)
	}
	for name, n := range map[string]int{"--dc-workers": cfg.DCWorkers, "--deployer-pod-workers": cfg.DeployerPodWorkers, "--image-trigger-workers": cfg.ImageTriggerWorkers} {
		if n < 1 {
			return fmt.Errorf("%s must be at least 1, not %d", name, n)
		}
	}
	return nil
}

// envSet reports whether the setting name is given in the environment, as envconfig reads
// it: STAGEHAND_<NAME>, or <NAME> alone.
func envSet(name string) bool {
	if _, ok := os.LookupEnv(envPrefix + "_" + name); ok {
		return true
	}
	_, ok := os.LookupEnv(name)
	return ok
}
