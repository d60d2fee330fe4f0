//go:build e2e

package deployer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// testAppImage runs e2e/testapp on the local cluster: a long-running server process.
const testAppImage = "stagehand/testapp:e2e"

// createDeploymentConfig creates dc in namespace through the generated clientset.
func createDeploymentConfig(t *testing.T, client versioned.Interface, namespace string, dc *v1alpha1.DeploymentConfig) *v1alpha1.DeploymentConfig {
	t.Helper()
	created, err := client.StagehandV1alpha1().DeploymentConfigs(namespace).Create(context.Background(), dc, metav1.CreateOptions{})
	require.NoError(t, err, "creating DeploymentConfig %s", dc.Name)
	return created
}

// createReplicaSet creates rs (a revision built with testutil.Revision).
func createReplicaSet(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	t.Helper()
	created, err := client.AppsV1().ReplicaSets(rs.Namespace).Create(context.Background(), rs, metav1.CreateOptions{})
	require.NoError(t, err, "creating ReplicaSet %s", rs.Name)
	return created
}

// shellHook is a lifecycle hook that runs script with /bin/sh -c in a new pod built from
// the template container "app", with env added. On the local cluster a template of
// testutil.SimulatedImage makes the hook a host process.
func shellHook(policy v1alpha1.LifecycleHookFailurePolicy, script string, env ...corev1.EnvVar) *v1alpha1.LifecycleHook {
	return &v1alpha1.LifecycleHook{
		FailurePolicy: policy,
		ExecNewPod: &v1alpha1.ExecNewPodHook{
			ContainerName: "app",
			Command:       []string{"/bin/sh", "-c", script},
			Env:           env,
		},
	}
}

// retryHook is shellHook with failure policy Retry, maxAttempts and a flat backoff of
// delaySeconds.
func retryHook(script string, maxAttempts, delaySeconds int32, env ...corev1.EnvVar) *v1alpha1.LifecycleHook {
	h := shellHook(v1alpha1.LifecycleHookFailurePolicyRetry, script, env...)
	h.Retry = &v1alpha1.RetryParams{MaxAttempts: maxAttempts,
		Backoff: v1alpha1.RetryBackoff{InitialDelaySeconds: delaySeconds, MaxDelaySeconds: delaySeconds}}
	return h
}

// eventsWithReason returns the events of namespace with reason, oldest first.
func eventsWithReason(t *testing.T, client kubernetes.Interface, namespace, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var events []corev1.Event
	for _, ev := range list.Items {
		if ev.Reason == reason {
			events = append(events, ev)
		}
	}
	return events
}

// hookPods returns the hook pods (stagehand.dev/hook label) of namespace.
func hookPods(t *testing.T, client kubernetes.Interface, namespace string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.HookStageLabel})
	require.NoError(t, err)
	return list.Items
}

// podRecorder watches the pods of a namespace and calls observe with all of them after
// every change, so that a test can check an invariant at every moment of a rollout.
type podRecorder struct {
	mu      sync.Mutex
	lister  cache.Store
	observe func(pods []*corev1.Pod)
}

// recordPods starts a podRecorder on namespace; it stops when the test ends.
func recordPods(t *testing.T, client kubernetes.Interface, namespace string, observe func(pods []*corev1.Pod)) *podRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	informer := factory.Core().V1().Pods().Informer()
	r := &podRecorder{lister: informer.GetStore(), observe: observe}
	handle := func(any) { r.record() }
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handle, UpdateFunc: func(_, obj any) { r.record() }, DeleteFunc: handle,
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced), "pod watch of %s", namespace)
	return r
}

func (r *podRecorder) record() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pods []*corev1.Pod
	for _, obj := range r.lister.List() {
		pods = append(pods, obj.(*corev1.Pod))
	}
	r.observe(pods)
}

// podAvailable reports whether pod is Ready and not terminating: available, with
// minReadySeconds 0.
func podAvailable(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
