package executionhook

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	stagehandinformers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// testController is a controller on fake clients. Its caches are never started: cache
// holds what a test puts there, while the fake apiserver holds objs.
type testController struct {
	*Controller
	sh    *stagehandfake.Clientset
	cache cache.Indexer // the hooks' cache
}

func newTestController(t *testing.T, exec Executor, pods []*corev1.Pod, objs ...runtime.Object) *testController {
	t.Helper()
	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	sh := stagehandfake.NewSimpleClientset(objs...)
	factory := stagehandinformers.NewSharedInformerFactory(sh, 0)
	hooks := factory.Stagehand().V1alpha1().ExecutionHooks()
	c, err := NewController(kubefake.NewSimpleClientset(kubeObjs...), sh, exec, hooks,
		factory.Stagehand().V1alpha1().HookActions(), Options{}, nil, logrus.NewEntry(logrus.New()))
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	return &testController{Controller: c, sh: sh, cache: hooks.Informer().GetIndexer()}
}

func (tc *testController) hook(t *testing.T, name string) *v1alpha1.ExecutionHook {
	t.Helper()
	h, err := tc.sh.StagehandV1alpha1().ExecutionHooks("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return h
}

func namedHook(name, action string, pods ...string) *v1alpha1.ExecutionHook {
	h := &v1alpha1.ExecutionHook{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("u-" + name)},
		Spec: v1alpha1.ExecutionHookSpec{ActionName: action}}
	for _, p := range pods {
		h.Spec.PodSelection.PodContainerNamesList = append(h.Spec.PodSelection.PodContainerNamesList, v1alpha1.PodContainerNames{PodName: p})
	}
	return h
}

func trueAction(name string) *v1alpha1.HookAction {
	return &v1alpha1.HookAction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Action: v1alpha1.Action{Exec: &v1alpha1.ExecAction{Command: []string{"true"}}}}
}

// The deployer creates a HookAction and then its ExecutionHook at once: a hook whose
// action is not in the cache yet reads it from the apiserver instead of failing
// ActionNotFound. An action missing from both still fails the hook.
func TestBeginReadsAnActionMissingFromTheCache(t *testing.T) {
	hook, lonely := namedHook("h", "a", "p"), namedHook("lonely", "missing", "p")
	tc := newTestController(t, &fakeExec{exit: func(string) int { return 0 }}, []*corev1.Pod{runningPod("p", "app")},
		hook, lonely, trueAction("a"))
	require.NoError(t, tc.cache.Add(hook))
	require.NoError(t, tc.cache.Add(lonely))

	require.NoError(t, tc.syncHandler(context.Background(), "ns/h"))
	got := tc.hook(t, "h")
	assert.Nil(t, got.Status.Error, "not failed for a cache miss")
	assert.Equal(t, v1alpha1.ExecutionHookRunning, got.Status.Phase)
	assert.Eventually(t, func() bool { return tc.hook(t, "h").Status.Phase == v1alpha1.ExecutionHookComplete },
		10*time.Second, 10*time.Millisecond)

	require.NoError(t, tc.syncHandler(context.Background(), "ns/lonely"))
	got = tc.hook(t, "lonely")
	assert.Equal(t, v1alpha1.ExecutionHookFailed, got.Status.Phase)
	require.NotNil(t, got.Status.Error)
	assert.Equal(t, v1alpha1.HookErrorActionNotFound, got.Status.Error.ErrorType)
}

// Named pods get the same rule as the pods a selector finds, through the same check
// that an attempt makes: one that is terminating or has finished is an entry that fails
// at once, for each container named, or for each of its containers.
func TestBeginFailsNamedPodsThatEnded(t *testing.T) {
	deleting := runningPod("deleting", "app", "side")
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Now()}, []string{"example.com/hold"}
	finished := runningPod("finished", "app")
	finished.Status.Phase = corev1.PodSucceeded
	hook := namedHook("h", "a", "deleting", "finished", "p")
	hook.Spec.PodSelection.PodContainerNamesList[1].ContainerNames = []string{"app"}
	exec := &fakeExec{exit: func(string) int { return 0 }}
	tc := newTestController(t, exec, []*corev1.Pod{deleting, finished, runningPod("p", "app")}, hook, trueAction("a"))
	require.NoError(t, tc.cache.Add(hook))

	require.NoError(t, tc.syncHandler(context.Background(), "ns/h"))
	got := tc.hook(t, "h")
	require.Equal(t, v1alpha1.ExecutionHookRunning, got.Status.Phase, "%+v", got.Status.Error)
	reasons := map[string]string{}
	for _, e := range got.Status.HookStatuses {
		reason := ""
		if e.Error != nil {
			reason = e.Error.Reason
			assert.Equal(t, ptrTo(false), e.Succeed, "%s/%s failed at once", e.PodName, e.ContainerName)
		}
		reasons[e.PodName+"/"+e.ContainerName] = reason
	}
	assert.Equal(t, map[string]string{"deleting/app": "PodTerminating", "deleting/side": "PodTerminating",
		"finished/app": "PodFinished", "p/app": ""}, reasons)
	assert.Eventually(t, func() bool { return !tc.running("ns/h") }, 10*time.Second, 10*time.Millisecond)
	exec.mu.Lock()
	defer exec.mu.Unlock()
	assert.Equal(t, []string{"p/app"}, exec.ran, "nothing runs in a pod that ended")
}
