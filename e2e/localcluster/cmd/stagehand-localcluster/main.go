// Command stagehand-localcluster runs the local control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the node agent), and optionally a container
// registry, in the background.
//
//	stagehand-localcluster up   [--dir D] [--nodes N] [--image-map F] [--bin-dir B] [--registry]
//	stagehand-localcluster down [--dir D]
//	stagehand-localcluster env  [--dir D]
//
// See docs/localcluster.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/stagehand-dev/stagehand/e2e/localcluster"
)

const usage = `usage: stagehand-localcluster <command> [flags]

commands:
  up     start the cluster in the background and wait until it is ready
  down   stop the cluster (succeeds when nothing runs)
  env    print the shell lines that point kubectl at the cluster
  agent  run the node agent in the foreground (started by up)
  registry-proxy
         run the registry's auth proxy in the foreground (started by up --registry)

Run "stagehand-localcluster <command> -h" for the flags. The folder defaults to
$STAGEHAND_LOCALCLUSTER_DIR, else .localcluster under the repository root.
`

func main() {
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	// client-go's klog lines join ours: its info at Debug, its errors at Error.
	localcluster.RouteKlog(logrus.WithField("component", "client-go"))
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "up":
		err = up(ctx, args)
	case "down":
		err = down(args)
	case "env":
		err = env(args)
	case "agent":
		err = agent(ctx, args)
	case "registry-proxy":
		err = registryProxy(ctx, args)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		logrus.WithError(err).Errorf("stagehand-localcluster %s failed", cmd)
		os.Exit(1)
	}
}

// dirFlag registers --dir and returns a function that resolves its default.
func dirFlag(fs *flag.FlagSet) func() (string, error) {
	dir := fs.String("dir", "", "cluster folder (default $"+localcluster.DirEnv+", else <repo>/.localcluster)")
	return func() (string, error) {
		if *dir != "" {
			return *dir, nil
		}
		if d := os.Getenv(localcluster.DirEnv); d != "" {
			return d, nil
		}
		root, err := localcluster.FindRepoRoot()
		if err != nil {
			return "", fmt.Errorf("no --dir given: %w", err)
		}
		return localcluster.DefaultDir(root), nil
	}
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dirOf := dirFlag(fs)
	nodes := fs.Int("nodes", 1, "number of Nodes the node agent serves")
	imageMap := fs.String("image-map", "", "image map file, one pattern=path per line (default: the Stagehand images in <repo>/bin)")
	binDir := fs.String("bin-dir", "", "folder with etcd and the Kubernetes binaries (default <repo>/bin/k8s-"+localcluster.KubernetesVersion+")")
	registry := fs.Bool("registry", false, "also start a container registry on loopback (needs docker-registry: hack/install-registry.sh)")
	apf := fs.Bool("apf", false, "run the apiserver with API Priority and Fairness on, as real clusters do")
	kubelet := fs.Bool("kubelet", false, "also start a real node: containerd, runc and the kubelet, Node "+
		localcluster.RealNodeName+" (needs root and --registry: hack/install-node.sh, hack/build-kubelet.sh)")
	_ = fs.Parse(args)
	dir, err := dirOf()
	if err != nil {
		return err
	}
	if *imageMap != "" {
		if _, err := os.Stat(*imageMap); err != nil {
			return fmt.Errorf("--image-map: %w", err)
		}
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir: dir, BinDir: *binDir, Nodes: *nodes, ImageMap: *imageMap, Registry: *registry, Detach: true,
		PriorityAndFairness: *apf, RealNode: *kubelet, Log: logrus.NewEntry(logrus.StandardLogger()),
	})
	if errors.Is(err, localcluster.ErrAlreadyRunning) {
		if statusErr := localcluster.Status(ctx, dir); statusErr != nil {
			return fmt.Errorf("%w; it looks broken (%w): run `stagehand-localcluster down --dir %s`",
				err, statusErr, dir)
		}
		if _, regErr := localcluster.LoadRegistry(dir); *registry && regErr != nil {
			return fmt.Errorf("a local cluster without a registry already runs in %s: run `stagehand-localcluster down --dir %s`, then `up --registry`",
				dir, dir)
		}
		logrus.WithField("dir", dir).Info("The local cluster is already running")
		fmt.Print(localcluster.EnvLines(dir))
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("kubeconfig: %s\n", c.KubeconfigPath())
	if r := c.Registry(); r != nil {
		fmt.Printf("registry: %s (%s/* needs the credentials in %s)\n",
			r.Address, strings.TrimSuffix(r.ProtectedPrefix, "/"), filepath.Join(dir, "registry-auth.json"))
	}
	fmt.Print(localcluster.EnvLines(dir))
	return nil
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dirOf := dirFlag(fs)
	_ = fs.Parse(args)
	dir, err := dirOf()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := localcluster.Down(dir); err != nil {
		return err
	}
	logrus.WithFields(logrus.Fields{"dir": dir, "took": time.Since(began).Round(time.Millisecond)}).
		Info("The local cluster is down")
	return nil
}

func env(args []string) error {
	fs := flag.NewFlagSet("env", flag.ExitOnError)
	dirOf := dirFlag(fs)
	_ = fs.Parse(args)
	dir, err := dirOf()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); err != nil {
		return fmt.Errorf("no cluster in %s (run `stagehand-localcluster up` first): %w", dir, err)
	}
	fmt.Print(localcluster.EnvLines(dir))
	return nil
}

func agent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ExitOnError)
	dir := fs.String("dir", "", "cluster folder written by up (required)")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("agent needs --dir")
	}
	return localcluster.RunAgent(ctx, *dir, logrus.WithField("component", "nodeagent"))
}

func registryProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("registry-proxy", flag.ExitOnError)
	dir := fs.String("dir", "", "cluster folder written by up (required)")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("registry-proxy needs --dir")
	}
	return localcluster.RunRegistryProxy(ctx, *dir, logrus.WithField("component", "registry-proxy"))
}
