//go:build e2e

package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// requireControlPlane returns the folder with the control-plane binaries, or skips the
// test (fails it in CI) when they are not built.
func requireControlPlane(t *testing.T) string {
	t.Helper()
	root, err := FindRepoRoot()
	require.NoError(t, err)
	bin := DefaultBinDir(root)
	gate.Require(t, ControlPlaneMissing(bin))
	return bin
}

func TestControlPlane(t *testing.T) {
	bin := requireControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	began := time.Now()
	c, err := Start(ctx, Options{Dir: t.TempDir(), BinDir: bin, Log: testLog(t)})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	t.Logf("started in %s", time.Since(began).Round(time.Millisecond))

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)

	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))

	ns, err := cs.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "localcluster-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"k": "v"}}
	_, err = cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, "probe", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", got.Data["k"])

	// The ServiceAccount controller gives every new namespace its default ServiceAccount.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
	assert.NoError(t, err, "default ServiceAccount in %s", ns.Name)

	for _, name := range c.NodeNames() {
		_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err, "Node %s", name)
	}

	// From 1.37 the EvictionRequest API is on (alphaAPIArgs): its resources are served and
	// a pod keeps the evictionResponders it is created with (docs/evictions.md)
	minor, err := minorVersion(filepath.Join(bin, "kube-apiserver"))
	require.NoError(t, err)
	if minor >= 37 {
		resources, err := cs.Discovery().ServerResourcesForGroupVersion(EvictionRequestGroupVersion)
		require.NoError(t, err, "the cluster serves %s", EvictionRequestGroupVersion)
		var names []string
		for _, r := range resources.APIResources {
			names = append(names, r.Name)
		}
		assert.Subset(t, names, []string{"evictionrequests", "evictions"})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "responder"}, Spec: corev1.PodSpec{
			Containers:         []corev1.Container{{Name: "c", Image: "example.com/app:1"}},
			EvictionResponders: []corev1.EvictionResponder{{Name: "stagehand.dev/defer", Priority: ptr.To[int32](10000)}}}}
		created, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err)
		assert.Len(t, created.Spec.EvictionResponders, 1, "the feature gate keeps the pod's evictionResponders")
	}

	pids := map[string]int{}
	for _, p := range c.procs {
		pids[p.name] = p.pid
	}
	for _, name := range []string{etcdName, apiserverName, controllerManagerName, schedulerName} {
		require.Contains(t, pids, name)
		assert.FileExists(t, c.layout.pidFile(name))
	}
	apiserverAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.state.Ports.APIServer))

	stopped = true
	require.NoError(t, c.Stop())

	for name, pid := range pids {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		assert.True(t, os.IsNotExist(err), "%s (pid %d) still exists after Stop", name, pid)
		assert.NoFileExists(t, c.layout.pidFile(name))
	}
	conn, err := net.DialTimeout("tcp", apiserverAddr, time.Second)
	if err == nil {
		conn.Close()
	}
	assert.Error(t, err, "the apiserver port %s still accepts connections after Stop", apiserverAddr)
	assert.NoError(t, Down(c.Dir()), "Down after Stop has nothing to do")
}
