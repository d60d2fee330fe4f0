package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/nodeagent"
)

// agentStopTimeout bounds how long the in-process agent may take to stop its pods.
const agentStopTimeout = agentTermGrace

// nodeNames are the names of the n Nodes the agent serves.
func nodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("stagehand-node-%d", i+1)
	}
	return names
}

// agentConfig fills in the node agent's configuration from the cluster folder.
func agentConfig(l layout, nodes int, rc *rest.Config, log *logrus.Entry) (nodeagent.Config, error) {
	im, err := nodeagent.LoadImageMap(l.imageMap())
	if err != nil {
		return nodeagent.Config{}, err
	}
	return nodeagent.Config{
		RESTConfig:      rc,
		NodeNames:       nodeNames(nodes),
		Dir:             l.agentDir(),
		ImageMap:        im,
		Address:         "127.0.0.1",
		PodNetwork:      podNetwork(log),
		ServingCertFile: l.pki().cert("kubelet"),
		ServingKeyFile:  l.pki().key("kubelet"),
		Log:             log,
	}, nil
}

// RunAgent runs the node agent for the cluster in dir until ctx ends. It is the body of
// `stagehand-localcluster agent`, which `up` starts in the background.
func RunAgent(ctx context.Context, dir string, log *logrus.Entry) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", dir, err)
	}
	l := layout{dir: abs}
	st, err := l.readState()
	if err != nil {
		return err
	}
	rc, err := loadRESTConfig(l.kubeconfig())
	if err != nil {
		return err
	}
	cfg, err := agentConfig(l, st.Nodes, rc, log)
	if err != nil {
		return err
	}
	if err := nodeagent.Run(ctx, cfg); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("running the node agent: %w", err)
	}
	return nil
}

// startAgent starts the node agent, in this process or, when detached, as
// `<executable> agent --dir <dir>`, and waits until every Node is Ready.
func (c *Cluster) startAgent(ctx context.Context) error {
	watch := make([]stoppable, 0, len(c.procs)+1)
	for _, p := range c.procs {
		watch = append(watch, p)
	}
	if c.opts.Detach {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this executable to run the node agent: %w", err)
		}
		p, err := startProcess(c.layout, agentName, true, exe, []string{"agent", "--dir", c.layout.dir})
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		watch = append(watch, p)
	} else {
		// client-go logs through klog, which writes to stderr: noise between a test's
		// lines. Its lines go to the cluster's logger (info at Debug) until the agent stops.
		restoreKlog := RouteKlog(c.log.WithField("component", "client-go"))
		a, err := startInProcessAgent(ctx, c.layout, c.state.Nodes, c.RESTConfig(), c.log.Logger.GetLevel())
		if err != nil {
			restoreKlog()
			return err
		}
		a.restoreKlog = restoreKlog
		c.agent = a
		watch = append(watch, a)
	}
	names := nodeNames(c.state.Nodes)
	what := fmt.Sprintf("Node(s) %v to be Ready", names)
	if err := waitUntil(ctx, what, nodesTimeout, nodesReady(c.client, names), watch...); err != nil {
		return err
	}
	c.log.WithField("nodes", len(names)).Info("Started the node agent")
	return nil
}

// inProcessAgent is nodeagent.Run on a goroutine of this process.
type inProcessAgent struct {
	agent       *nodeagent.Agent // for node faults
	cancel      context.CancelFunc
	done        chan struct{}
	err         error
	logPath     string
	logOut      *os.File
	restoreKlog func() // hands klog back once the agent has stopped
}

// startInProcessAgent runs the agent with its own log file, like the other components.
func startInProcessAgent(ctx context.Context, l layout, nodes int, rc *rest.Config, level logrus.Level) (*inProcessAgent, error) {
	logPath := l.logFile(agentName)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the node agent log: %w", err)
	}
	logger := logrus.New()
	logger.SetOutput(f)
	logger.SetLevel(level)
	logger.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	cfg, err := agentConfig(l, nodes, rc, logrus.NewEntry(logger))
	if err != nil {
		f.Close()
		return nil, err
	}
	agent, err := nodeagent.New(cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	// The agent lives until Stop, not until the start-up context ends.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &inProcessAgent{agent: agent, cancel: cancel, done: make(chan struct{}), logPath: logPath, logOut: f}
	go func() {
		defer close(a.done)
		a.err = agent.Run(runCtx)
	}()
	return a, nil
}

func (a *inProcessAgent) exitErr() error {
	select {
	case <-a.done:
	default:
		return nil
	}
	err := a.err
	if err == nil {
		err = errors.New("returned early")
	}
	return stoppedError("the node agent", err, a.logPath)
}

func (a *inProcessAgent) logFile() string { return a.logPath }

// stop cancels the agent and waits for it to stop its pods.
func (a *inProcessAgent) stop() error {
	a.cancel()
	if a.restoreKlog != nil {
		defer a.restoreKlog()
	}
	select {
	case <-a.done:
		a.logOut.Close()
		if a.err != nil && !errors.Is(a.err, context.Canceled) {
			return fmt.Errorf("node agent: %w", a.err)
		}
		return nil
	case <-time.After(agentStopTimeout):
		return fmt.Errorf("the node agent did not stop within %s; see %s", agentStopTimeout, a.logPath)
	}
}

// nodesReady checks that every Node is Ready and free of the not-ready and unreachable
// taints, so that the scheduler places pods on it at once.
func nodesReady(cs kubernetes.Interface, names []string) check {
	return func(ctx context.Context) error {
		for _, name := range names {
			node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("getting Node %s: %w", name, err)
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s is not Ready", name)
			}
			for _, t := range node.Spec.Taints {
				if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
					return fmt.Errorf("node %s still has the taint %s", name, t.Key)
				}
			}
		}
		return nil
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
