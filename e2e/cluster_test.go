//go:build e2e

package e2e

// The cluster the suite runs on must behave like Kubernetes for the parts Stagehand relies
// on: ReplicaSets, pod exit codes and termination messages, logs, exec, service-account
// identity under RBAC, and garbage collection. On the local cluster these tests prove the
// node agent; on kind they hold by construction.

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

var images = framework.TestImages()

const podTimeout = 60 * time.Second

func testAppPod(name string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers:                    []corev1.Container{{Name: "app", Image: images.TestApp, Args: args}},
		},
	}
}

func createPod(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err, "creating pod %s", pod.Name)
	return created
}

func TestClusterReplicaSetScalesUpAndDown(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a ReplicaSet with no pods
	rs := createTestAppReplicaSet(t, ns, "scale", 0)

	// When it is scaled to 5, then 5 pods become ready
	scale(t, ns, rs.Name, 5)
	env.WaitForPods(t, ns, "app=scale", podTimeout, "5 ready pods", func(pods []*corev1.Pod) bool {
		ready := 0
		for _, p := range pods {
			if framework.PodReady(p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		return ready == 5
	})

	// When it is scaled to 0, then every pod is gone
	scale(t, ns, rs.Name, 0)
	env.WaitForPods(t, ns, "app=scale", podTimeout, "no pods", func(pods []*corev1.Pod) bool { return len(pods) == 0 })
}

// createTestAppReplicaSet creates a ReplicaSet of the test app, selected by app=<name>.
func createTestAppReplicaSet(t *testing.T, ns, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": name}
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Create(context.Background(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers:                    []corev1.Container{{Name: "app", Image: images.TestApp}},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating ReplicaSet %s", name)
	return rs
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := env.Kube.AppsV1().ReplicaSets(ns).GetScale(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = env.Kube.AppsV1().ReplicaSets(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "scaling ReplicaSet %s to %d", name, replicas)
}

func TestClusterPodExitCodeAndTerminationMessage(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a pod that exits 3 with a termination message, and one that exits 0
	createPod(t, ns, testAppPod("fails", "exit", "3", "database unreachable"))
	createPod(t, ns, testAppPod("succeeds", "exit", "0"))

	// Then the first ends Failed with that exit code and message
	failed := env.WaitForPod(t, ns, "fails", podTimeout, "pod fails to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodFailed, failed.Status.Phase)
	require.Len(t, failed.Status.ContainerStatuses, 1)
	term := failed.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "the container must be terminated")
	assert.Equal(t, int32(3), term.ExitCode)
	assert.Equal(t, "database unreachable", term.Message)
	assert.Equal(t, "Error", term.Reason)

	// And the second ends Succeeded with exit code 0
	ok := env.WaitForPod(t, ns, "succeeds", podTimeout, "pod succeeds to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, ok.Status.Phase)
	require.NotNil(t, ok.Status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(0), ok.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.Equal(t, "Completed", ok.Status.ContainerStatuses[0].State.Terminated.Reason)
}

func TestClusterLogsFollowARunningProcess(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a running pod that prints a line every second
	createPod(t, ns, testAppPod("ticker", "serve"))
	env.WaitForPod(t, ns, "ticker", podTimeout, "pod ticker running", func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodRunning
	})

	// When its log is followed, then new lines arrive while it runs
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := env.Kube.CoreV1().Pods(ns).GetLogs("ticker", &corev1.PodLogOptions{Container: "app", Follow: true}).Stream(ctx)
	require.NoError(t, err)
	defer stream.Close()
	var seen []string
	scanner := bufio.NewScanner(stream)
	for scanner.Scan() {
		seen = append(seen, scanner.Text())
		if strings.Contains(scanner.Text(), "tick 3") {
			break
		}
	}
	require.Contains(t, strings.Join(seen, "\n"), "tick 3", "followed log: %q (scan error %v)", seen, scanner.Err())
	assert.Contains(t, strings.Join(seen, "\n"), "tick 1", "the followed log starts at the beginning")

	// And a plain read with tailLines returns only the last lines
	raw, err := env.Kube.CoreV1().Pods(ns).GetLogs("ticker", &corev1.PodLogOptions{Container: "app", TailLines: ptr.To[int64](1)}).DoRaw(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(raw)), "\n")+1, "tailLines=1 gave %q", raw)
}

func TestClusterExecReturnsOutputAndExitCode(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a running pod
	createPod(t, ns, testAppPod("target", "serve"))
	env.WaitForPod(t, ns, "target", podTimeout, "pod target ready", func(p *corev1.Pod) bool { return p != nil && framework.PodReady(p) })

	// When a command that succeeds is run in it, then its output comes back and no error
	stdout, stderr, err := env.Exec(t, ns, "target", "app", "/bin/sh", "-c", "echo hello from exec")
	require.NoError(t, err, "stderr: %s", stderr)
	assert.Equal(t, "hello from exec\n", stdout)

	// When a command that fails is run, then its exit code and both streams come back
	stdout, stderr, err = env.Exec(t, ns, "target", "app", "/bin/sh", "-c", "echo out; echo err >&2; exit 7")
	var exitErr utilexec.CodeExitError
	require.True(t, errors.As(err, &exitErr), "want an exit code error, got %v", err)
	assert.Equal(t, 7, exitErr.ExitStatus())
	assert.Equal(t, "out\n", stdout)
	assert.Equal(t, "err\n", stderr)
}

func TestClusterServiceAccountIdentityFollowsRBAC(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	// Given a service account with no permissions, and a ConfigMap to read
	_, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "visible-config"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	reader := func(name string) *corev1.Pod {
		pod := testAppPod(name, "kube", "get", "configmaps", "-n", ns)
		pod.Spec.ServiceAccountName = "reader"
		return pod
	}

	// When a pod lists ConfigMaps as that account, then it is Forbidden (exit 3)
	createPod(t, ns, reader("denied"))
	denied := env.WaitForPod(t, ns, "denied", podTimeout, "pod denied to finish", framework.PodFinished)
	require.NotNil(t, denied.Status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(3), denied.Status.ContainerStatuses[0].State.Terminated.ExitCode, "want Forbidden (exit 3):\n%s", podLog(t, ns, "denied"))
	assert.Contains(t, podLog(t, ns, "denied"), "system:serviceaccount:"+ns+":reader", "the request must be made as the pod's service account")

	// When a Role and RoleBinding grant list, then a new pod lists them
	_, err = env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader-reads-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createPod(t, ns, reader("allowed"))
	allowed := env.WaitForPod(t, ns, "allowed", podTimeout, "pod allowed to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, allowed.Status.Phase, "log:\n%s", podLog(t, ns, "allowed"))
	assert.Contains(t, podLog(t, ns, "allowed"), "visible-config")
}

func podLog(t *testing.T, ns, pod string) string {
	t.Helper()
	raw, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	return string(raw)
}

func TestClusterGarbageCollectsPodsOfADeletedReplicaSet(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a ReplicaSet with 3 running pods
	createTestAppReplicaSet(t, ns, "owned", 3)
	env.WaitForPods(t, ns, "app=owned", podTimeout, "3 running pods", func(pods []*corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3
	})

	// When the ReplicaSet is deleted (background propagation, as kubectl does)
	require.NoError(t, env.Kube.AppsV1().ReplicaSets(ns).Delete(context.Background(), "owned", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}))

	// Then the garbage collector removes its pods
	env.WaitForPods(t, ns, "app=owned", podTimeout, "the owned pods to be gone", func(pods []*corev1.Pod) bool { return len(pods) == 0 })
}

func TestClusterRestartPoliciesRestartWithACount(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a pod that fails under OnFailure, and one that succeeds under Always
	onFailure := testAppPod("on-failure", "exit", "1", "crashed")
	onFailure.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	always := testAppPod("always", "exit", "0")
	always.Spec.RestartPolicy = corev1.RestartPolicyAlways
	createPod(t, ns, onFailure)
	createPod(t, ns, always)

	// Then both are restarted, with a count and the last termination kept
	for _, name := range []string{"on-failure", "always"} {
		pod := env.WaitForPod(t, ns, name, podTimeout, name+" restarted twice", func(p *corev1.Pod) bool {
			return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
		})
		last := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
		require.NotNil(t, last, "%s: the last termination is kept", name)
		if name == "on-failure" {
			assert.Equal(t, int32(1), last.ExitCode)
		} else {
			assert.Equal(t, int32(0), last.ExitCode)
		}
		assert.NotEqual(t, corev1.PodSucceeded, pod.Status.Phase)
		assert.NotEqual(t, corev1.PodFailed, pod.Status.Phase)
	}

	// And a pod that succeeds under OnFailure is not restarted
	createPod(t, ns, func() *corev1.Pod {
		p := testAppPod("done", "exit", "0")
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		return p
	}())
	done := env.WaitForPod(t, ns, "done", podTimeout, "pod done to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, done.Status.Phase)
	assert.Zero(t, done.Status.ContainerStatuses[0].RestartCount)
}

func TestClusterActiveDeadlineFailsThePod(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a long-running pod with a 2 s deadline
	pod := testAppPod("deadline", "serve")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	createPod(t, ns, pod)

	// Then it ends Failed with reason DeadlineExceeded
	failed := env.WaitForPod(t, ns, "deadline", podTimeout, "pod deadline to fail", framework.PodFinished)
	assert.Equal(t, corev1.PodFailed, failed.Status.Phase)
	assert.Equal(t, "DeadlineExceeded", failed.Status.Reason)
}

// A deleted pod with a finalizer is treated as a kubelet treats it: its containers are
// stopped, its phase becomes terminal, and the Pod object stays until the finalizer is
// removed; then it goes. (DeferPolicies will rely on this.)
func TestClusterFinalizerKeepsAStoppedPodUntilReleased(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	const finalizer = "example.com/hold"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{finalizer}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers:                    []corev1.Container{{Name: "app", Image: "example.com/held:1", Command: []string{"sleep", "3600"}}},
		},
	}
	createPod(t, ns, pod)
	env.WaitForPod(t, ns, "held", podTimeout, "the container running", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctx, "held", metav1.DeleteOptions{}))

	stopped := env.WaitForPod(t, ns, "held", podTimeout, "the container stopped and the phase terminal", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	assert.Contains(t, stopped.Finalizers, finalizer)
	time.Sleep(3 * time.Second) // past the grace period: the object must still be there
	held, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
	require.NoError(t, err, "the finalizer keeps the Pod object")
	assert.Contains(t, held.Finalizers, finalizer)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Finalizers = nil
		_, err = env.Kube.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}))
	require.Eventually(t, func() bool {
		_, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		return err != nil && strings.Contains(err.Error(), "not found")
	}, podTimeout, 200*time.Millisecond, "the pod goes once its finalizer is removed")
}
