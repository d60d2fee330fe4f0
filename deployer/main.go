package deployer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/version"
	"github.com/stagehand-dev/stagehand/strategies"
)

// OpenShiftName is the name of OpenShift's deployer binary. Invoked under that name (a
// symlink or copy named openshift-deploy), this binary behaves exactly as under its own
// name, so OpenShift custom strategy scripts such as `openshift-deploy --until=50%` run
// unchanged; only --version and the usage show the name.
const OpenShiftName = "openshift-deploy"

// cancelGrace is how long a flow may take to return after SIGTERM before the deployer
// exits without it.
const cancelGrace = 2 * time.Second

// Main is the whole deployer binary: it reads the Config (environment, then flags in args),
// sets up logging and the Kubernetes client, runs flow until it returns or SIGTERM
// arrives, writes the termination message and returns the exit code for os.Exit. name is
// the binary's name, for --version and usage (OpenShiftName when argv[0] is that).
func Main(name string, args []string, flow Flow) int {
	name = ProgramName(os.Args[0], name)
	cfg, cfgErr := LoadConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	showVersion := fs.Bool("version", false, "print the version and exit")
	cfg.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		cfgErr = strategies.Invalidf("%s: %v", name, err)
	}
	if *showVersion {
		fmt.Fprintln(os.Stdout, version.String(name))
		return 0
	}
	out := strategies.NewProgress(os.Stdout)
	log, err := NewLogger(cfg.LogFormat, cfg.LogLevel, os.Stderr)
	if cfgErr == nil {
		cfgErr = err
	}
	if cfgErr == nil {
		_, _, cfgErr = cfg.Resolved()
	}
	if cfgErr == nil {
		_, cfgErr = strategies.ParseUntil(cfg.Until)
	}
	if cfgErr != nil {
		return int(Finish(cfg.TerminationMessagePath, asInvalid(cfgErr), "", nil, out, log))
	}
	if cfg.FailureHook {
		flow = FailureHook
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	clients, err := NewClients()
	if err != nil {
		return int(Finish(cfg.TerminationMessagePath, err, "", nil, out, log))
	}
	return ExecuteWith(ctx, cfg, clients, out, log, flow)
}

// Clients are the deployer's clients: Kubernetes, and stagehand.dev for exec hooks.
type Clients struct {
	Kube kubernetes.Interface
	// Stagehand may be nil: exec hooks then fail as invalid.
	Stagehand stagehandclient.Interface
}

// Execute is ExecuteWith without a stagehand.dev client: exec hooks fail as invalid.
func Execute(ctx context.Context, cfg Config, client kubernetes.Interface, out *strategies.Progress, log *logrus.Entry, flow Flow) int {
	return ExecuteWith(ctx, cfg, Clients{Kube: client}, out, log, flow)
}

// ExecuteWith runs one rollout in process: it resolves the revision, loads the inputs,
// runs flow, writes the termination message and returns the exit code. When ctx is
// cancelled (SIGTERM), it returns within cancelGrace with ExitCancelled even if flow does
// not.
func ExecuteWith(ctx context.Context, cfg Config, clients Clients, out *strategies.Progress, log *logrus.Entry, flow Flow) int {
	type outcome struct {
		success string
		err     error
		hooks   []v1alpha1.HookOutcome
	}
	result := make(chan outcome, 1)
	go func() {
		revision, namespace, err := cfg.Resolved()
		if err != nil {
			result <- outcome{err: err}
			return
		}
		d, err := New(ctx, clients.Kube, clients.Stagehand, namespace, revision, out, log)
		if err != nil {
			result <- outcome{err: err}
			return
		}
		if d.Until, err = strategies.ParseUntil(cfg.Until); err != nil {
			result <- outcome{err: err}
			return
		}
		d.Log.WithField("until", cfg.Until).Info("deploying")
		if err := flow(ctx, d); err != nil {
			result <- outcome{err: err, hooks: d.HookPods.Outcomes()}
			return
		}
		d.DeleteSucceededHookPods(ctx)
		if d.Done == "" {
			d.Done = fmt.Sprintf("revision %s is complete: %d pods available", d.Inputs.To.Name, d.Inputs.Desired)
		}
		result <- outcome{success: d.Done, hooks: d.HookPods.Outcomes()}
	}()
	var o outcome
	select {
	case o = <-result:
	case <-ctx.Done():
		select {
		case o = <-result:
		case <-time.After(cancelGrace):
			o.err = fmt.Errorf("%w: the deployer was stopped (SIGTERM)", strategies.ErrCancelled)
		}
	}
	err, success := o.err, o.success
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w: the deployer was stopped (SIGTERM) while: %w", strategies.ErrCancelled, err)
	}
	return int(Finish(cfg.TerminationMessagePath, err, success, o.hooks, out, log))
}

// NewLogger returns the deployer's logger on w: text or JSON, at level. klog output from
// client-go goes into it at warning level.
func NewLogger(format, level string, w io.Writer) (*logrus.Entry, error) {
	logger := logrus.New()
	logger.SetOutput(w)
	var err error
	switch format {
	case "", "text":
	case "json":
		logger.SetFormatter(&logrus.JSONFormatter{})
	default:
		err = strategies.Invalidf("unknown log format %q: use text or json", format)
	}
	if level != "" {
		l, lerr := logrus.ParseLevel(level)
		if lerr != nil && err == nil {
			err = strategies.Invalidf("unknown log level %q: use debug, info, warning or error", level)
		}
		if lerr == nil {
			logger.SetLevel(l)
		}
	}
	klog.LogToStderr(false)
	klog.SetOutput(logger.WriterLevel(logrus.WarnLevel))
	return logrus.NewEntry(logger), err
}

// NewClients builds the Kubernetes and the stagehand.dev clients as NewClient does.
func NewClients() (Clients, error) {
	config, err := restConfig()
	if err != nil {
		return Clients{}, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return Clients{}, strategies.Invalidf("building the Kubernetes client: %v", err)
	}
	sh, err := stagehandclient.NewForConfig(config)
	if err != nil {
		return Clients{}, strategies.Invalidf("building the stagehand.dev client: %v", err)
	}
	return Clients{Kube: kube, Stagehand: sh}, nil
}

// NewClient builds the Kubernetes client the standard way: the in-cluster config first,
// then KUBECONFIG (the local cluster hands pods a kubeconfig) and ~/.kube/config.
func NewClient() (kubernetes.Interface, error) {
	config, err := restConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, strategies.Invalidf("building the Kubernetes client: %v", err)
	}
	return client, nil
}

// restConfig is the client configuration of NewClient, with the deployer's rate limit.
func restConfig() (*rest.Config, error) {
	config, err := rest.InClusterConfig()
	if err != nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		config, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, strategies.Invalidf("no Kubernetes client configuration: not in a pod (%v), and no usable KUBECONFIG: %v", rest.ErrNotInCluster, err)
		}
	}
	// client-go's default rate limit (5 requests per second, burst 10) paced every step
	// of a rollout once the burst was spent: a scale is two requests, so 0.4 s a step.
	// One deployer runs one rollout, so it may go as fast as kubectl does.
	config.QPS, config.Burst = ClientQPS, ClientBurst
	return config, nil
}

// The deployer's client-side rate limit towards the apiserver (kubectl's defaults).
const (
	ClientQPS   = 50
	ClientBurst = 300
)

// ProgramName is OpenShiftName when the binary was invoked as openshift-deploy (argv0 is
// os.Args[0]), else name.
func ProgramName(argv0, name string) string {
	if filepath.Base(argv0) == OpenShiftName {
		return OpenShiftName
	}
	return name
}

func asInvalid(err error) error {
	var invalid *strategies.InvalidError
	if errors.As(err, &invalid) {
		return err
	}
	return strategies.Invalidf("%v", err)
}
