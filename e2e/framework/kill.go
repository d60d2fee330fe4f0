package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KillController kills the controller the way a crash would. On the local cluster it sends
// SIGKILL to the controller's process (the node agent restarts the container, as a kubelet
// would); on a cluster given by kubeconfig it force-deletes the controller pod (grace 0) and
// the Deployment starts a new one. It waits until there is a process to kill.
func (e *Env) KillController(t *testing.T) {
	t.Helper()
	if e.cluster == nil {
		pods, err := e.Kube.CoreV1().Pods(ControllerNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: ControllerSelector})
		if err != nil {
			t.Fatalf("listing controller pods: %v", err)
		}
		for _, p := range pods.Items {
			if err := e.Kube.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatalf("force-deleting controller pod %s: %v", p.Name, err)
			}
		}
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		pids := e.LocalProcesses("stagehand-controller")
		if len(pids) > 0 {
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Logf("killing controller pid %d: %v", pid, err)
					continue
				}
				t.Logf("killed the controller process (pid %d) with SIGKILL", pid)
			}
			e.replaceCrashLoopingController(t)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stagehand-controller process of this cluster ran within 90s\n%s", e.ControllerLogs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// maxInPlaceRestarts bounds the in-place restarts of the controller's container. The node
// agent, like a kubelet, doubles the wait before each restart (1 s, 2 s, 4 s, ...), and the
// suite kills the controller on purpose many times across tests: beyond this count the
// crashed pod is deleted so that the Deployment starts a fresh one, as a real cluster
// would after the back-off reset. The kill itself stays a SIGKILL at a random moment.
const maxInPlaceRestarts = 3

func (e *Env) replaceCrashLoopingController(t *testing.T) {
	t.Helper()
	pods, err := e.Kube.CoreV1().Pods(ControllerNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: ControllerSelector})
	if err != nil {
		t.Fatalf("listing controller pods: %v", err)
	}
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			restarts = max(restarts, cs.RestartCount)
		}
		if restarts < maxInPlaceRestarts || p.DeletionTimestamp != nil {
			continue
		}
		if err := e.Kube.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatalf("deleting the crash-looping controller pod %s: %v", p.Name, err)
		}
		t.Logf("controller pod %s restarted %d times: deleted it, so that a fresh pod starts without back-off", p.Name, restarts)
	}
}

// LocalProcesses returns the pids of this local cluster's pod processes whose executable's
// base name is binary. A pod process is recognised by its environment, which points into the
// cluster's folder (docs/localcluster.md). It returns nothing on a cluster given by kubeconfig.
func (e *Env) LocalProcesses(binary string) []int {
	if e.cluster == nil {
		return nil
	}
	marker := []byte(e.cluster.Dir())
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || filepath.Base(exe) != binary {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(environ, marker) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
