//go:build e2e

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The component restarts run while clients keep the apiserver busy; afterwards the
// cluster works end to end: a ReplicaSet's pod (controller manager, scheduler, node
// agent) runs.

func TestRestartAPIServerKeepsTheClusterWorking(t *testing.T) {
	// Given a cluster with clients busy against its apiserver
	c, cs := startFaultCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	load := startAPILoad(ctx, t, cs, 4)
	old, err := c.liveProcess(apiserverName)
	oldStart := startOf(t, old.pid)
	require.NoError(t, err)

	// When the apiserver restarts after a second down
	began := time.Now()
	require.NoError(t, c.RestartComponent(ctx, apiserverName, time.Second))
	t.Logf("restarted %s in %s", apiserverName, time.Since(began).Round(time.Millisecond))

	// Then a new apiserver process runs on the same port, and the cluster tracks it
	restarted := requireRestarted(t, c, old, oldStart)
	restartedStart := startOf(t, restarted.pid)
	// And the clients went on by themselves
	load.requireGoesOn(t)
	// And a ReplicaSet's pod runs
	requireReplicaSetRuns(ctx, t, cs, "after-apiserver-restart")
	// And Stop stops the new process
	require.NoError(t, c.Stop())
	assert.False(t, procAlive(restarted.pid, restartedStart), "the restarted apiserver outlived Stop")
}

func TestRestartEtcdKeepsTheData(t *testing.T) {
	// Given a cluster with a ConfigMap and a running pod, and clients busy against it
	c, cs := startFaultCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := requireReplicaSetRuns(ctx, t, cs, "before-etcd-restart")
	load := startAPILoad(ctx, t, cs, 4)
	old, err := c.liveProcess(etcdName)
	oldStart := startOf(t, old.pid)
	require.NoError(t, err)

	// When etcd restarts after a second down
	began := time.Now()
	require.NoError(t, c.RestartComponent(ctx, etcdName, time.Second))
	t.Logf("restarted %s in %s", etcdName, time.Since(began).Round(time.Millisecond))

	// Then a new etcd process runs, and the cluster tracks it
	requireRestarted(t, c, old, oldStart)
	// And what was there before is still there
	got, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cm.UID, got.UID)
	assert.Equal(t, map[string]string{"k": "v"}, got.Data)
	gotPod, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod.UID, gotPod.UID)
	assert.Equal(t, corev1.PodRunning, gotPod.Status.Phase)
	// And the clients went on by themselves, and a new ReplicaSet's pod runs
	load.requireGoesOn(t)
	requireReplicaSetRuns(ctx, t, cs, "after-etcd-restart")
}

// startFaultCluster starts a cluster of the given number of nodes for one test; it stops
// when the test ends.
func startFaultCluster(t *testing.T, nodes int) (*Cluster, kubernetes.Interface) {
	t.Helper()
	bin := requireControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), BinDir: bin, Nodes: nodes, Log: testLog(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return c, cs
}

// requireRestarted checks that the component of old (which started at oldStart) runs as
// another, live process, which the cluster and the pid file name and which listens where
// old did, and that old is gone.
func requireRestarted(t *testing.T, c *Cluster, old *process, oldStart string) *process {
	t.Helper()
	p, err := c.liveProcess(old.name)
	require.NoError(t, err)
	require.NotEqual(t, old.pid, p.pid, "%s runs as the same process", old.name)
	assert.False(t, procAlive(old.pid, oldStart), "the old %s (pid %d) still runs", old.name, old.pid)
	assert.True(t, procAlive(p.pid, ""), "the new %s (pid %d) does not run", old.name, p.pid)
	pid, alive, err := readPIDFile(c.layout.pidFile(old.name))
	require.NoError(t, err)
	assert.Equal(t, p.pid, pid, "the pid file names the new process")
	assert.True(t, alive)
	assert.Equal(t, old.cmd.Args, p.cmd.Args, "the same binary with the same arguments (and so ports)")
	return p
}

// apiLoad keeps clients busy: workers create and read ConfigMaps until the test ends.
type apiLoad struct {
	ok, failed atomic.Int64
}

func startAPILoad(ctx context.Context, t *testing.T, cs kubernetes.Interface, workers int) *apiLoad {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	l := &apiLoad{}
	loadCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				if err := l.once(loadCtx, cs, ns.Name); err != nil {
					l.failed.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				l.ok.Add(1)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		t.Logf("API load: %d requests went through, %d failed", l.ok.Load(), l.failed.Load())
	})
	require.Eventually(t, func() bool { return l.ok.Load() > 0 }, 10*time.Second, 10*time.Millisecond,
		"the load's first requests")
	return l
}

func (l *apiLoad) once(ctx context.Context, cs kubernetes.Interface, ns string) error {
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	_, err = cms.Get(ctx, cm.Name, metav1.GetOptions{})
	return err
}

// requireGoesOn checks that the load's requests go through again.
func (l *apiLoad) requireGoesOn(t *testing.T) {
	t.Helper()
	from := l.ok.Load()
	require.Eventually(t, func() bool { return l.ok.Load() >= from+20 }, 30*time.Second, 10*time.Millisecond,
		"the load's clients should go on (%d failed so far)", l.failed.Load())
}

// requireReplicaSetRuns creates a ReplicaSet of one simulated pod in default and waits
// until its pod runs: the controller manager, the scheduler and the node agent all work.
// The bound is 2 minutes: after an apiserver restart the ReplicaSet controller may fail a
// few syncs ("read version ... is not as new as written version") and back off, and a CI
// run on a busy machine once took more than 30 s.
func requireReplicaSetRuns(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptrTo(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
		},
	}
	_, err := cs.AppsV1().ReplicaSets(metav1.NamespaceDefault).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)
	var running *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				running = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the pod of ReplicaSet %s should run", name)
	return running
}

func ptrTo[T any](v T) *T { return &v }

// podDir is the node agent's folder of a pod.
func podDir(c *Cluster, pod *corev1.Pod) string {
	return filepath.Join(c.layout.agentDir(), "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// readPodPID waits for the pid that a pidScript container wrote into its pod folder.
func readPodPID(t *testing.T, c *Cluster, pod *corev1.Pod) int {
	t.Helper()
	path := filepath.Join(podDir(c, pod), "pid")
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "pod %s should write its pid to %s", pod.Name, path)
	return pid
}
