package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseName is the controller's leader Lease in ControllerNamespace, as deploy/ sets it.
const LeaseName = "stagehand-controller"

// Leader returns the name of the controller pod that holds the leader Lease, from the
// Lease's holder identity (`<pod name>_<uuid>`), or "" when none holds it.
func (e *Env) Leader(ctx context.Context) (string, error) {
	lease, err := e.Kube.CoordinationV1().Leases(ControllerNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod, nil
}

// WaitForLeader waits until a running controller pod other than not holds the Lease, and
// returns its name and when it was first seen leading.
func (e *Env) WaitForLeader(t *testing.T, not string, timeout time.Duration) (string, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		name, err := e.Leader(context.Background())
		if err == nil && name != "" && name != not {
			pod, err := e.Kube.CoreV1().Pods(ControllerNamespace).Get(context.Background(), name, metav1.GetOptions{})
			if err == nil && pod.Status.Phase == corev1.PodRunning {
				return name, time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no controller pod other than %q took the leader Lease within %s (last: %q, %v)\n%s", not, timeout, name, err, e.ControllerLogs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// KillPodProcesses sends SIGKILL to every process of the local cluster's pod ns/name whose
// executable is binary (a crash of that one pod's container), and returns how many it
// killed.
func (e *Env) KillPodProcesses(t *testing.T, ns, name, binary string) int {
	t.Helper()
	killed := 0
	for _, pid := range e.PodProcesses(ns, name, binary) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Logf("killing pid %d of pod %s/%s: %v", pid, ns, name, err)
			continue
		}
		killed++
	}
	return killed
}

// PodProcesses are the PIDs of the local cluster's pod ns/name whose executable is binary.
// A pod process is recognised by its environment, which points into the pod's folder,
// named `<ns>_<pod>_<uid>` (docs/localcluster.md).
func (e *Env) PodProcesses(ns, name, binary string) []int {
	marker := []byte("/" + ns + "_" + name + "_")
	var pids []int
	for _, pid := range e.LocalProcesses(binary) {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && bytes.Contains(environ, marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ControllerRestarts is the sum of the restarts of every controller pod's containers.
func (e *Env) ControllerRestarts(t *testing.T) int32 {
	t.Helper()
	pods, err := e.Kube.CoreV1().Pods(ControllerNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: ControllerSelector})
	if err != nil {
		t.Fatalf("listing controller pods: %v", err)
	}
	n := int32(0)
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}
