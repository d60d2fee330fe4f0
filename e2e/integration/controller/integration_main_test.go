//go:build e2e

// Package controllerintegration runs the controllers in the test process against the local
// control plane: real API, admission, garbage collection and ReplicaSet controller.
package controllerintegration

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// env is the local control plane of this package's integration tests; nil when the
// control-plane binaries are missing outside CI, and the tests skip with skipReason.
var (
	env        *framework.Env
	skipReason string
)

func TestMain(m *testing.M) {
	framework.Main(m, "controller integration tests", func(e *framework.Env, reason string) { env, skipReason = e, reason })
}

func requireEnv(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
}

// newManager is the controllers of the product, scoped to ns, with their metrics on a
// registry of their own. It is the one place where these tests name the controller's API.
func newManager(ns string, log *logrus.Entry) (*controller.Manager, error) {
	opts := controller.Options{Namespace: ns, DeployerImage: "stagehand/deployer:e2e", Workers: 2}
	return controller.NewManager(env.Kube, env.Stagehand, opts, plumbing.NewMetrics(prometheus.NewRegistry()), log)
}

// runController runs the controllers in-process, scoped to ns, until the returned stop
// function is called; stop waits until they have stopped.
func runController(t *testing.T, ns string) (stop func()) {
	t.Helper()
	logger := logrus.New()
	logger.SetOutput(t.Output())
	logger.SetLevel(logrus.WarnLevel)
	mgr, err := newManager(ns, logrus.NewEntry(logger))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); mgr.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// stubDC is a DC whose Custom strategy runs script on the host (the node agent runs any
// image's explicit command), and whose app pods are simulated by the node agent.
func stubDC(name string, replicas int32, script string) *v1alpha1.DeploymentConfig {
	return &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DeploymentConfigSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
			Strategy: v1alpha1.DeploymentStrategy{
				Type:         v1alpha1.DeploymentStrategyTypeCustom,
				CustomParams: &v1alpha1.CustomDeploymentStrategyParams{Image: "stub/deployer:1", Command: []string{"/bin/sh", "-c", script}},
			},
		},
	}
}

// rollsOut is a stub script that first does what a deployer must do before it exits 0
// (DESIGN.md §4 invariant 6: no Complete on an exit code alone): scale its revision to
// the desired replicas, with kubectl running as the pod's service account
// (stagehand-deployer). The node agent's simulated pods are available at once.
func rollsOut(script string) string {
	kubectl := filepath.Join(localcluster.DefaultBinDir(env.RepoRoot), "kubectl")
	return fmt.Sprintf(`k=%q; ns="$STAGEHAND_NAMESPACE"; rs="$STAGEHAND_REVISION"; `+
		`n=$("$k" -n "$ns" get rs "$rs" -o jsonpath='{.metadata.annotations.stagehand\.dev/desired-replicas}') && `+
		`"$k" -n "$ns" scale rs "$rs" --replicas="$n" >/dev/null && %s`, kubectl, script)
}

// waitFor polls cond every 200 ms until it holds.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

// podLog records every deployer pod of a namespace for the whole test: how many times
// each name was created, and the most that were unfinished at once.
type podLog struct {
	mu      sync.Mutex
	created map[string]int
	live    map[string]bool
	maxLive int
}

func recordDeployerPods(t *testing.T, ns string) *podLog {
	t.Helper()
	w, err := env.Kube.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.DeployerPodForLabel})
	require.NoError(t, err)
	l := &podLog{created: map[string]int{}, live: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			l.mu.Lock()
			if ev.Type == watch.Added {
				l.created[pod.Name]++
			}
			finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
			if ev.Type == watch.Deleted || finished {
				delete(l.live, pod.Name)
			} else {
				l.live[pod.Name] = true
			}
			l.maxLive = max(l.maxLive, len(l.live))
			l.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return l
}

func (l *podLog) snapshot() (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.created))
	for k, v := range l.created {
		out[k] = v
	}
	return out, l.maxLive
}
