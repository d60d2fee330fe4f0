package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// KubeconfigEnv names the variable that points the suite at an existing cluster. When it
// is empty, the suite starts a local control plane of its own.
const KubeconfigEnv = "E2E_KUBECONFIG"

// Env is the cluster a test binary runs against, with its clients.
type Env struct {
	Config     *rest.Config
	Kube       kubernetes.Interface
	Stagehand  stagehandclient.Interface
	Dynamic    dynamic.Interface
	Kubeconfig string
	RepoRoot   string

	cluster        *localcluster.Cluster
	tmpDir         string
	controllerArgs []string
	controllerEnv  map[string]string
	realImages     map[string]PushedImage
}

// ClusterMissing returns why Start has no cluster to give on this machine ("" when it has
// one): E2E_KUBECONFIG is not set, and the local control plane is not built. A TestMain
// hands the reason to gate.Check, and its tests to gate.Require.
func ClusterMissing() string {
	if os.Getenv(KubeconfigEnv) != "" {
		return ""
	}
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return err.Error()
	}
	return localcluster.ControlPlaneMissing(localcluster.DefaultBinDir(root))
}

// StartOptions shape the local cluster that StartWith starts; a cluster given by
// E2E_KUBECONFIG ignores them.
type StartOptions struct {
	// Nodes is how many Nodes the node agent registers (default 1). Each allows 1,000 pods.
	Nodes int
	// AuditLog makes the apiserver write an audit log of every request; see
	// Env.AuditLogPath.
	AuditLog bool
	// PriorityAndFairness runs the apiserver with API Priority and Fairness on, as real
	// clusters do (the tests leave it off; the bench turns it on).
	PriorityAndFairness bool
	// ControllerArgs are added to the controller's arguments on the local cluster (the
	// chaos suite shortens the leader Lease with them).
	ControllerArgs []string
	// NoInstall leaves Stagehand out, CRDs included: the binary installs it its own way
	// (the Helm chart's tests). Ignored on E2E_KUBECONFIG's cluster.
	NoInstall bool
	// RealNode adds the real node (containerd, runc, the kubelet and kube-proxy) to the
	// local cluster, builds the images and pushes them to its registry, and points the
	// controller's deployer image there (see realnode.go).
	RealNode bool
}

// Start connects to the cluster in $E2E_KUBECONFIG, or starts a local one in a temporary
// folder and installs Stagehand there from deploy/ (see InstallStagehand).
func Start(ctx context.Context) (*Env, error) {
	return StartWith(ctx, StartOptions{})
}

// StartWith is Start with options for the local cluster.
func StartWith(ctx context.Context, opts StartOptions) (*Env, error) {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return nil, err
	}
	env := &Env{RepoRoot: root, controllerArgs: opts.ControllerArgs}
	if opts.RealNode && os.Getenv(KubeconfigEnv) != "" {
		return nil, fmt.Errorf("the real-node suite starts its own local cluster: unset %s", KubeconfigEnv)
	}
	if path := os.Getenv(KubeconfigEnv); path != "" {
		env.Kubeconfig = path
		env.Config, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading %s=%s: %w", KubeconfigEnv, path, err)
		}
	} else if err := env.startLocal(ctx, opts); err != nil {
		return nil, err
	}
	env.Config.QPS, env.Config.Burst = 100, 200
	if env.Kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if env.Stagehand, err = stagehandclient.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if env.Dynamic, err = dynamic.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if opts.NoInstall && env.cluster != nil {
		return env, nil
	}
	if err := env.InstallCRDs(ctx); err != nil {
		env.Stop()
		return nil, err
	}
	if err := env.InstallStagehand(ctx); err != nil {
		env.Stop()
		return nil, err
	}
	return env, nil
}

func (e *Env) startLocal(ctx context.Context, opts StartOptions) error {
	dir, err := os.MkdirTemp("", "stagehand-e2e-")
	if err != nil {
		return err
	}
	e.tmpDir = dir
	// The registry starts when docker-registry is installed; without it the tests that push
	// images skip, except in CI, where the suite fails instead.
	noRegistry, err := gate.Check(localcluster.RegistryMissing())
	if err != nil {
		return err
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	e.cluster, err = localcluster.Start(ctx, localcluster.Options{
		Dir:                 filepath.Join(dir, "cluster"),
		BinDir:              localcluster.DefaultBinDir(e.RepoRoot),
		Registry:            !noRegistry || opts.RealNode,
		RealNode:            opts.RealNode,
		Nodes:               opts.Nodes,
		AuditLog:            opts.AuditLog,
		PriorityAndFairness: opts.PriorityAndFairness,
		Log:                 logrus.NewEntry(log),
	})
	if err != nil {
		return fmt.Errorf("starting the local cluster (build it with `make controlplane`): %w", err)
	}
	e.Config = e.cluster.RESTConfig()
	e.Kubeconfig = e.cluster.KubeconfigPath()
	if opts.RealNode {
		return e.pushImages(ctx)
	}
	return nil
}

// Cluster is the local cluster the suite started, for fault injection (restarts of the
// apiserver and etcd, node faults); nil on a cluster given by E2E_KUBECONFIG.
func (e *Env) Cluster() *localcluster.Cluster { return e.cluster }

// Local reports whether the suite runs on a local cluster it started (hooks and pods run
// as host processes there), rather than on a cluster given by E2E_KUBECONFIG.
func (e *Env) Local() bool { return e.cluster != nil }

// AuditLogPath is the local cluster's apiserver audit log (JSON lines, level Metadata), or
// "" when StartOptions.AuditLog was not set or the cluster is not a local one.
func (e *Env) AuditLogPath() string {
	if e.cluster == nil {
		return ""
	}
	return e.cluster.AuditLogPath()
}

// Stop stops a local cluster that Start started; a cluster given by kubeconfig is left alone.
func (e *Env) Stop() {
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			logrus.WithError(err).Warn("Stopping the local cluster")
		}
	}
	if e.tmpDir != "" && os.Getenv("E2E_KEEP") == "" {
		_ = os.RemoveAll(e.tmpDir)
	}
}
