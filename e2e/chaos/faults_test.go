//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// injected is one fault as it ran.
type injected struct {
	fault
	Began  time.Duration // after the run's start
	Target string
	Result string // what happened, or why it could not run
}

// injector runs the planned faults; lost holds the nodes lost for good.
type injector struct {
	t     *testing.T
	sz    size
	start time.Time

	mu   sync.Mutex
	lost []string
	log  []injected
}

// run injects f and records it.
func (in *injector) run(ctx context.Context, f fault) {
	rec := injected{fault: f, Began: time.Since(in.start).Round(100 * time.Millisecond)}
	var err error
	switch f.Kind {
	case leaderKill:
		rec.Target, rec.Result, err = in.killLeader(ctx)
	case nodeStop:
		rec.Target, rec.Result, err = in.stopNode(ctx, f.Pick)
	case nodeLost:
		rec.Target, rec.Result, err = in.loseNode(ctx, f.Pick)
	case apiserverRestart:
		rec.Target, err = "kube-apiserver", env.Cluster().RestartComponent(ctx, "kube-apiserver", in.sz.ControlPlaneDowntime)
	case etcdRestart:
		rec.Target, err = "etcd", env.Cluster().RestartComponent(ctx, "etcd", in.sz.ControlPlaneDowntime)
	}
	if err != nil {
		rec.Result = "ERROR: " + err.Error()
	} else if rec.Result == "" {
		rec.Result = "ok"
	}
	in.t.Logf("fault at %s: %s %s: %s", rec.Began, f.Kind, rec.Target, rec.Result)
	in.mu.Lock()
	in.log = append(in.log, rec)
	in.mu.Unlock()
}

// killLeader SIGKILLs the process of the pod that holds the Lease, then waits until
// another process holds it, and says how long that took. A pod restarted three times is
// deleted, so that the Deployment starts a fresh one, as a real cluster's back-off reset
// would allow (framework.KillController does the same).
func (in *injector) killLeader(ctx context.Context) (string, string, error) {
	// The Lease may still name a leader that died a moment ago (its pod deleted after a
	// crash loop, its node lost): wait for one whose process runs.
	var identity, pod string
	var killedAt time.Time
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var err error
		if identity, err = waitForHolder(ctx, "", time.Until(deadline)); err != nil {
			return "", "", err
		}
		pod, _, _ = strings.Cut(identity, "_")
		killedAt = time.Now()
		if env.KillPodProcesses(in.t, framework.ControllerNamespace, pod, "stagehand-controller") > 0 {
			break
		}
		if time.Now().After(deadline) {
			return pod, "", fmt.Errorf("the leader pod %s has no process to kill", pod)
		}
		time.Sleep(500 * time.Millisecond)
	}
	next, err := waitForHolder(ctx, identity, 2*time.Minute)
	if err != nil {
		return pod, "", err
	}
	nextPod, _, _ := strings.Cut(next, "_")
	in.resetCrashLoop(ctx, pod, nextPod)
	return pod, fmt.Sprintf("%s leads after %.1fs", nextPod, time.Since(killedAt).Seconds()), nil
}

// waitForHolder waits until the Lease has a holder other than not, and returns it.
func waitForHolder(ctx context.Context, not string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lease, err := env.Kube.CoordinationV1().Leases(framework.ControllerNamespace).Get(ctx, framework.LeaseName, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && *lease.Spec.HolderIdentity != not &&
			lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) < 8*time.Second {
			return *lease.Spec.HolderIdentity, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("no controller other than %q held the Lease within %s", not, timeout)
}

// resetCrashLoop deletes the killed leader's pod once its container has restarted three
// times, so that the node agent's growing back-off does not keep it down (a real
// cluster's back-off resets after ten minutes of running). It never deletes the pod that
// leads now: when the killed pod's own restart took the Lease back, deleting it would
// leave no controller while the ReplicaSet replaces it (a run once deleted both replicas
// at once this way, and no controller led for two minutes).
func (in *injector) resetCrashLoop(ctx context.Context, killed, leader string) {
	if killed == leader {
		return
	}
	p, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).Get(ctx, killed, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		return
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount >= 3 {
			_ = env.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			return
		}
	}
}

// deployerNode picks the node of a running deployer pod (pick chooses among them), or,
// when none runs now, among the nodes still there.
func (in *injector) deployerNode(ctx context.Context, pick uint64) (string, error) {
	in.mu.Lock()
	lost := slices.Clone(in.lost)
	in.mu.Unlock()
	var nodes []string
	for range 20 {
		pods, err := env.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.DeployerPodForLabel})
		if err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && !slices.Contains(lost, p.Spec.NodeName) &&
					!slices.Contains(nodes, p.Spec.NodeName) {
					nodes = append(nodes, p.Spec.NodeName)
				}
			}
		}
		if len(nodes) > 0 {
			break
		}
		time.Sleep(time.Second)
	}
	if len(nodes) == 0 {
		for _, n := range env.Cluster().NodeNames() {
			if !slices.Contains(lost, n) {
				nodes = append(nodes, n)
			}
		}
	}
	if len(nodes) == 0 {
		return "", fmt.Errorf("no node left")
	}
	slices.Sort(nodes)
	return nodes[pick%uint64(len(nodes))], nil
}

// stopNode stops the node agent's part for a node that runs a deployer, for NodeStopFor,
// and starts it again, like a kubelet killed and restarted; its containers keep running.
func (in *injector) stopNode(ctx context.Context, pick uint64) (string, string, error) {
	node, err := in.deployerNode(ctx, pick)
	if err != nil {
		return "", "", err
	}
	if err := env.Cluster().StopNode(node); err != nil {
		return node, "", err
	}
	time.Sleep(in.sz.NodeStopFor)
	// A kubelet that starts again keeps trying to register until the apiserver answers (one
	// may be restarting at that very moment): so does this, for up to 3 minutes.
	deadline := time.Now().Add(3 * time.Minute)
	attempts := 0
	for {
		attempts++
		err := env.Cluster().StartNode(ctx, node)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return node, "", fmt.Errorf("starting it again (%d attempts): %w", attempts, err)
		}
		in.t.Logf("starting node %s again: %v; retrying", node, err)
		time.Sleep(2 * time.Second)
	}
	return node, fmt.Sprintf("stopped for %s, started again (%d attempts)", in.sz.NodeStopFor, attempts), nil
}

// loseNode loses a node that runs a deployer for good: its containers die with it, and
// its Node object is deleted, as a cloud provider's node controller would.
func (in *injector) loseNode(ctx context.Context, pick uint64) (string, string, error) {
	node, err := in.deployerNode(ctx, pick)
	if err != nil {
		return "", "", err
	}
	if err := env.Cluster().LoseNode(node); err != nil {
		return node, "", err
	}
	in.mu.Lock()
	in.lost = append(in.lost, node)
	in.mu.Unlock()
	if err := env.Kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		return node, "", fmt.Errorf("deleting node %s: %w", node, err)
	}
	return node, "containers killed, Node deleted", nil
}
