//go:build e2e

package localcluster

// Nothing a cluster started may outlive it: not when its test binary is killed with
// SIGKILL, and not after `down` of a detached cluster. Both tests give a pod a background
// process (`sleep 600 & sleep 600`), the kind of grandchild that Pdeathsig alone misses.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

const (
	// killedHelperEnv holds the cluster folder of TestHelperClusterThatGetsKilled.
	killedHelperEnv = "STAGEHAND_TEST_KILLED_CLUSTER_DIR"
	// helperReady starts the line the helper prints once its pod runs: "<prefix> <dir> <port>".
	helperReady = "killed-cluster-ready"
	// leftoverTimeout is how long everything may take to die after the kill or `down`.
	leftoverTimeout = 15 * time.Second
	sleeperCommand  = "sleep 600"
)

func TestKilledTestBinaryLeavesNoProcessBehind(t *testing.T) {
	requireControlPlane(t)
	// Given a test binary that runs a cluster with a pod that started background processes
	dir := t.TempDir()
	child := startHelperBinary(t, "TestHelperClusterThatGetsKilled", killedHelperEnv, dir)
	gotDir, port := readHelperReady(t, child.stdout, child.stderr)
	require.Equal(t, dir, gotDir)
	requireSleepersRunning(t, dir)

	// When the test binary is killed
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	// Then no process of the cluster is left, pods and their children included
	assertNothingLeft(t, dir)
	// And the apiserver's port is closed
	assertPortsClosed(t, map[string]int{"kube-apiserver": port})
}

// `down` of a cluster that `up` started in the background stops all of it.
func TestDownLeavesNoProcessOrPortOfADetachedCluster(t *testing.T) {
	bin := requireControlPlane(t)
	exe := buildCommand(t, "e2e/localcluster", "./cmd/stagehand-localcluster", "stagehand-localcluster")
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := Down(dir); err != nil { // only does something when this test failed
			t.Logf("cleaning up: %v", err)
		}
	})
	// Given a cluster that `up` started, with a pod that started background processes
	runCommand(t, 3*time.Minute, exe, "up", "--dir", dir, "--bin-dir", bin)
	l := layout{dir: dir}
	rc, err := loadRESTConfig(l.kubeconfig())
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, runSleeperPod(ctx, cs))
	requireSleepersRunning(t, dir)
	st, err := l.readState()
	require.NoError(t, err)
	ports := map[string]int{
		"etcd client": st.Ports.EtcdClient, "etcd peer": st.Ports.EtcdPeer, apiserverName: st.Ports.APIServer,
		controllerManagerName: st.Ports.ControllerManager, schedulerName: st.Ports.Scheduler,
	}
	for _, name := range nodeNames(st.Nodes) {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		ports[name+" kubelet"] = int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}

	// When it is taken down
	runCommand(t, time.Minute, exe, "down", "--dir", dir)

	// Then no process of it is left, pods and their children included, and no port is open
	assertNothingLeft(t, dir)
	assertPortsClosed(t, ports)
	pidFiles, _ := filepath.Glob(l.pidFile("*"))
	assert.Empty(t, pidFiles, "down removes the pid files")
}

// buildCommand builds the main package pkg of the Go module in moduleDir (relative to the
// repository root) into a temporary folder as name, for tests that need a real binary (for
// example `up`, which runs `<binary> agent`).
func buildCommand(t *testing.T, moduleDir, pkg, name string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not in PATH (%v); it builds %s for this test", err, name)
	}
	root, err := FindRepoRoot()
	require.NoError(t, err)
	exe := filepath.Join(t.TempDir(), name)
	began := time.Now()
	build := exec.Command(goTool, "build", "-o", exe, pkg)
	build.Dir = filepath.Join(root, moduleDir)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building %s:\n%s", name, out)
	t.Logf("built %s in %s", name, time.Since(began).Round(time.Millisecond))
	return exe
}

// runCommand runs a command to completion and fails the test when it fails.
func runCommand(t *testing.T, timeout time.Duration, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
}

// readHelperReady waits for the helper's ready line and returns its folder and port.
// helperBinary is this test binary, started again to run one helper test.
type helperBinary struct {
	*exec.Cmd
	stdout io.Reader
	stderr *bytes.Buffer
}

// startHelperBinary starts this test binary running only the helper test, with envKey=dir
// in its environment. Should the calling test die, the child goes too; when it ends, the
// child is killed and the cluster folder brought down.
func startHelperBinary(t *testing.T, helperTest, envKey, dir string) *helperBinary {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^"+helperTest+"$", "-test.timeout=5m")
	child.Env = append(os.Environ(), envKey+"="+dir)
	h := &helperBinary{Cmd: child, stderr: &bytes.Buffer{}}
	child.Stderr = h.stderr
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	h.stdout = stdout
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, startLocked(child))
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
		if err := Down(dir); err != nil { // only does something when the test failed
			t.Logf("cleaning up: %v", err)
		}
	})
	return h
}

func readHelperReady(t *testing.T, stdout interface{ Read([]byte) (int, error) }, stderr *bytes.Buffer) (string, int) {
	t.Helper()
	type ready struct {
		dir  string
		port int
	}
	got := make(chan ready, 1)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r ready
			if _, err := fmt.Sscanf(sc.Text(), helperReady+" %s %d", &r.dir, &r.port); err == nil {
				got <- r
				return
			}
		}
	}()
	select {
	case r, ok := <-got:
		require.True(t, ok, "the helper exited before its cluster was ready; its stderr:\n%s", stderr)
		return r.dir, r.port
	case <-time.After(3 * time.Minute):
		t.Fatalf("the helper's cluster was not ready within 3 minutes")
		return "", 0
	}
}

// TestHelperClusterThatGetsKilled is the test binary that TestKilledTestBinaryLeavesNoProcessBehind
// kills. It runs only when that test starts it.
func TestHelperClusterThatGetsKilled(t *testing.T) {
	dir, ok := os.LookupEnv(killedHelperEnv)
	if !ok {
		t.Skip("helper of TestKilledTestBinaryLeavesNoProcessBehind; it runs only when started by it")
	}
	bin := requireControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	c, err := Start(ctx, Options{Dir: dir, BinDir: bin, Log: logrus.NewEntry(logger)})
	require.NoError(t, err)
	defer func() { _ = c.Stop() }()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	require.NoError(t, runSleeperPod(ctx, cs))

	_, _ = fmt.Fprintf(os.Stdout, "%s %s %d\n", helperReady, c.Dir(), c.state.Ports.APIServer)
	time.Sleep(3 * time.Minute) // the test kills this process long before
}

// runSleeperPod creates a pod whose command leaves a process in the background, and waits
// until it runs.
func runSleeperPod(ctx context.Context, cs kubernetes.Interface) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "sleeper",
			Image:   "example.com/sleeper:1",
			Command: []string{"/bin/sh", "-c", sleeperCommand + " & " + sleeperCommand},
		}}},
	}
	if _, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod sleeper: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for pod sleeper to run: %w", err)
	}
	return nil
}

// requireSleepersRunning checks that the sleeper pod's two sleeps run, so that the checks
// after the kill prove something.
func requireSleepersRunning(t *testing.T, dir string) {
	t.Helper()
	sleepers := func() int {
		n := 0
		for _, p := range processesOf(dir) {
			if _, cmdline, _ := strings.Cut(p, " "); cmdline == sleeperCommand {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return sleepers() == 2 }, 10*time.Second, 50*time.Millisecond,
		"the sleeper pod's two sleeps should run; processes of the cluster: %v", processesOf(dir))
}

// assertNothingLeft waits until no process refers to dir, and kills what is left when
// the wait fails, so that the failure does not linger.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	ok := assert.Eventually(t, func() bool { return len(processesOf(dir)) == 0 }, leftoverTimeout, 100*time.Millisecond,
		"processes of the cluster outlived it")
	if !ok {
		left := processesOf(dir)
		t.Logf("left behind: %s", strings.Join(left, "; "))
		for _, p := range left {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// assertPortsClosed checks that nothing accepts connections on the ports any more.
func assertPortsClosed(t *testing.T, ports map[string]int) {
	t.Helper()
	for name, port := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		assert.Eventually(t, func() bool {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
			}
			return err != nil
		}, leftoverTimeout, 100*time.Millisecond, "%s's port %s still accepts connections", name, addr)
	}
}

// processesOf lists the live processes ("<pid> <command line>") whose command line or
// environment mentions dir: the control plane has it in its flags, every pod process in
// STAGEHAND_TERMINATION_MESSAGE_PATH. This process is left out.
func processesOf(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(cmdline, []byte(dir)) || bytes.Contains(environ, []byte(dir)) {
			found = append(found, e.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return found
}
