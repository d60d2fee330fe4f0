//go:build e2e

package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The node faults run on two nodes: the faulty one, and one that must go on as before.
// They check Leases and processes rather than the Node's conditions, which the node
// lifecycle controller changes only after its 40 s grace period.

// $$$$ is the shell's $$ once the kubelet's expansion of $(VAR) references turned $$ into $.
const (
	// sleepScript writes the container's pid into its pod folder and sleeps.
	sleepScript = "echo $$$$ > pid; exec sleep 600"
	// quitScript writes its pid and exits 0 once the file quit appears in its pod folder.
	quitScript = "echo $$$$ > pid; while [ ! -e quit ]; do sleep 0.1; done"
	// leaseRenewal is the node agent's Lease renewal period (nodeagent.leaseRenewPeriod)
	// with a second to spare.
	leaseRenewal = 11 * time.Second
)

func TestStopNodeFreezesItsKubeletUntilStartNode(t *testing.T) {
	c, cs := startFaultCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	running, stopped := c.NodeNames()[0], c.NodeNames()[1]
	// Given pods with processes on the node that will stop
	keeper := createScriptPod(ctx, t, cs, "keeper", stopped, corev1.RestartPolicyAlways, sleepScript)
	doomed := createScriptPod(ctx, t, cs, "doomed", stopped, corev1.RestartPolicyAlways, sleepScript)
	quitter := createScriptPod(ctx, t, cs, "quitter", stopped, corev1.RestartPolicyNever, quitScript)
	for _, p := range []*corev1.Pod{keeper, doomed, quitter} {
		waitForPod(ctx, t, cs, p.Name, "Running", isRunning)
	}
	keeperPID, doomedPID, quitterPID := readPodPID(t, c, keeper), readPodPID(t, c, doomed), readPodPID(t, c, quitter)
	keeperStart, doomedStart, quitterStart := startOf(t, keeperPID), startOf(t, doomedPID), startOf(t, quitterPID)

	// When the node stops, and meanwhile a pod of it is deleted, one is created for it, and
	// one's container exits
	require.NoError(t, c.StopNode(stopped))
	stoppedAt := time.Now()
	require.NoError(t, cs.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, doomed.Name, metav1.DeleteOptions{}))
	late := createScriptPod(ctx, t, cs, "late", stopped, corev1.RestartPolicyAlways, sleepScript)
	require.NoError(t, os.WriteFile(filepath.Join(podDir(c, quitter), "quit"), nil, 0o644))
	require.Eventually(t, func() bool { return !procAlive(quitterPID, quitterStart) }, 10*time.Second, 20*time.Millisecond,
		"the quitter's process should exit on its own")
	time.Sleep(time.Until(stoppedAt.Add(leaseRenewal)))

	// Then the stopped node's Lease was not renewed, while the other node's was
	assert.True(t, leaseRenewTime(ctx, t, cs, stopped).Before(stoppedAt), "the stopped node renewed its Lease")
	assert.True(t, leaseRenewTime(ctx, t, cs, running).After(stoppedAt), "the running node's Lease was not renewed")
	// And the containers keep running
	assert.True(t, procAlive(keeperPID, keeperStart), "the keeper's process died with its kubelet")
	assert.True(t, procAlive(doomedPID, doomedStart), "the deletion of a pod was acted on while its node was stopped")
	// And nothing was reported or acted on: the deleted pod is still there, the new pod did
	// not start, and the quitter is still Running
	got := getPod(ctx, t, cs, doomed.Name)
	assert.NotNil(t, got.DeletionTimestamp)
	got = getPod(ctx, t, cs, late.Name)
	assert.Empty(t, got.Status.ContainerStatuses, "the new pod's status was reported")
	assert.Equal(t, corev1.PodPending, got.Status.Phase)
	assert.NoFileExists(t, filepath.Join(podDir(c, late), "pid"), "the new pod started")
	assert.Equal(t, corev1.PodRunning, getPod(ctx, t, cs, quitter.Name).Status.Phase, "the quitter's end was reported")

	// When the node starts again
	startedAt := time.Now()
	require.NoError(t, c.StartNode(ctx, stopped))
	t.Logf("StartNode took %s", time.Since(startedAt).Round(time.Millisecond))

	// Then its Lease is renewed again
	assert.Eventually(t, func() bool { return leaseRenewTime(ctx, t, cs, stopped).After(startedAt) },
		5*time.Second, 50*time.Millisecond, "the Lease should be renewed once the node starts")
	// And the deleted pod is stopped and deleted, the new pod runs, the quitter succeeded
	waitForPodGone(ctx, t, cs, doomed.Name)
	assert.False(t, procAlive(doomedPID, doomedStart), "the deleted pod's process outlived its pod")
	waitForPod(ctx, t, cs, late.Name, "Running", isRunning)
	readPodPID(t, c, late)
	waitForPod(ctx, t, cs, quitter.Name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	// And the keeper runs on, the same process, reported Running without a restart
	assert.True(t, procAlive(keeperPID, keeperStart), "the keeper's process")
	got = getPod(ctx, t, cs, keeper.Name)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	require.Len(t, got.Status.ContainerStatuses, 1)
	assert.Zero(t, got.Status.ContainerStatuses[0].RestartCount)
}

// startOf is the start time of process pid, which tells it from a later process given the
// same PID: pid_max may be 32768, and a busy machine wraps around it in seconds.
func startOf(t *testing.T, pid int) string {
	t.Helper()
	start, err := procStartTime(pid)
	require.NoError(t, err)
	return start
}

func TestLoseNodeKillsItsContainers(t *testing.T) {
	c, cs := startFaultCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kept, lost := c.NodeNames()[0], c.NodeNames()[1]
	// Given a pod with a process on each node
	survivor := createScriptPod(ctx, t, cs, "survivor", kept, corev1.RestartPolicyAlways, sleepScript)
	victim := createScriptPod(ctx, t, cs, "victim", lost, corev1.RestartPolicyAlways, sleepScript)
	waitForPod(ctx, t, cs, survivor.Name, "Running", isRunning)
	waitForPod(ctx, t, cs, victim.Name, "Running", isRunning)
	survivorPID, victimPID := readPodPID(t, c, survivor), readPodPID(t, c, victim)
	survivorStart, victimStart := startOf(t, survivorPID), startOf(t, victimPID)

	// When one node is lost
	require.NoError(t, c.LoseNode(lost))

	// Then its container's processes are gone at once, the shim's included
	require.Eventually(t, func() bool { return len(processesOf(podDir(c, victim))) == 0 }, 5*time.Second, 20*time.Millisecond,
		"the lost node's container should be killed")
	assert.False(t, procAlive(victimPID, victimStart))
	// And they do not come back, nor is anything reported, while the other node's pod runs on
	require.NoError(t, os.Remove(filepath.Join(podDir(c, victim), "pid")))
	assert.Never(t, func() bool { return len(processesOf(podDir(c, victim))) > 0 }, 3*time.Second, 50*time.Millisecond,
		"the lost node's container started again")
	got := getPod(ctx, t, cs, victim.Name)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	require.Len(t, got.Status.ContainerStatuses, 1)
	assert.NotNil(t, got.Status.ContainerStatuses[0].State.Running, "the killed container's end was reported")
	assert.True(t, procAlive(survivorPID, survivorStart), "the other node's pod died")

	// When its Node is deleted, and the node starts again, as a machine that came back
	oldNode, err := cs.CoreV1().Nodes().Get(ctx, lost, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, cs.CoreV1().Nodes().Delete(ctx, lost, metav1.DeleteOptions{}))
	require.NoError(t, c.StartNode(ctx, lost))

	// Then the Node is registered again
	node, err := cs.CoreV1().Nodes().Get(ctx, lost, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, oldNode.UID, node.UID)
	// And the killed container restarts, as its restart policy says
	waitForPod(ctx, t, cs, victim.Name, "restarted", func(p *corev1.Pod) bool {
		return isRunning(p) && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	assert.NotEqual(t, victimPID, readPodPID(t, c, victim))

	// When the other node is stopped, and then the cluster
	require.NoError(t, c.StopNode(kept))
	require.NoError(t, c.Stop())

	// Then the stopped node's container went with the cluster, as everything else did
	assert.False(t, procAlive(survivorPID, survivorStart), "a container of a stopped node outlived Stop")
	assertNothingLeft(t, c.Dir())
}

// createScriptPod creates a pod on node whose container runs script with sh.
func createScriptPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, node string,
	policy corev1.RestartPolicy, script string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: policy,
			Containers: []corev1.Container{{
				Name: "main", Image: "example.com/sh:1", Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
	created, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

func isRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
		p.Status.ContainerStatuses[0].State.Running != nil
}

func getPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func waitForPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	var last *corev1.Pod
	if !assert.Eventually(t, func() bool {
		p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return ok(p)
	}, 30*time.Second, 50*time.Millisecond, "pod %s should be %s", name, what) {
		if last != nil {
			t.Logf("pod %s's last status: %+v", name, last.Status)
		}
		t.FailNow()
	}
}

func waitForPodGone(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 50*time.Millisecond, "pod %s should be deleted", name)
}

func leaseRenewTime(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string) time.Time {
	t.Helper()
	lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.RenewTime)
	return lease.Spec.RenewTime.Time
}
