//go:build e2e

package e2e

// Namespaces with a ResourceQuota (DESIGN.md §4 invariant 7, §5): a quota that requires
// requests and limits admits every pod Stagehand makes for itself, and a quota that is
// full delays a rollout, naming the quota, without failing it.

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// createQuota creates a ResourceQuota and waits until the quota controller has computed
// its status: before that, its admission refuses every pod of the namespace.
func createQuota(t *testing.T, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		q, err := env.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) == len(hard)
	}, podTimeout, 100*time.Millisecond, "the quota controller to compute quota %s", name)
}

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// A namespace whose quota requires CPU and memory requests and limits, as shared clusters
// and OpenShift's defaults have, from before the first rollout: a DC whose template sets
// its own rolls out with a pre hook (the hook pod keeps the container's resources, the
// deployer pod gets the controller's defaults), and its deleted pod's defer step runs (the
// step pod gets the --defer-step-* defaults).
func TestQuotaThatRequiresResourcesAdmitsDeployerHookAndStepPods(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: quantities("cpu", "10m", "memory", "16Mi"), Limits: quantities("cpu", "100m", "memory", "64Mi")}
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating")}
	s := env.Given(t).DeploymentConfig(dc)
	createQuota(t, s.NS, "compute", quantities("requests.cpu", "2", "requests.memory", "1Gi", "limits.cpu", "4", "limits.memory", "2Gi"))
	createDeferPolicy(t, s.NS, "web", nil, stagehandv1.DeferStep{Name: "clean", Image: images.Shell,
		Command: []string{"/bin/sh", "-c", "echo cleaned $STAGEHAND_POD_NAME"}})
	hookPods := watchPodResources(t, s.NS, stagehandv1.HookStageLabel+"=pre")

	s.When().Created().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete)

	deployer, err := env.Kube.CoreV1().Pods(s.NS).Get(ctx, stagehandv1.DeployerPodName("web-1"), metav1.GetOptions{})
	require.NoError(t, err)
	res := deployer.Spec.Containers[0].Resources
	assert.False(t, res.Limits.Cpu().IsZero() || res.Limits.Memory().IsZero(), "the deployer pod has limits: %v", res)
	assert.Equal(t, []string{"cpu=100m,memory=64Mi"}, hookPods.seen(), "the pre hook ran with the container's limits")

	pods := env.WaitForPods(t, s.NS, "app=web", podTimeout, "the DC's pod running with the finalizer", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Status.Phase == corev1.PodRunning && stagehandv1.HasDeferFinalizer(ps[0])
	})
	pod := pods[0]
	progress := watchProgress(t, s.NS, pod.Name)
	deletePod(t, s.NS, pod.Name, nil)
	assert.Equal(t, []string{"0/1", "1/1"}, progress.waitGone(t, deferTimeout), "events: %v", podEvents(t, s.NS, pod.Name))
	steps := stepPods(t, s.NS, string(pod.UID))
	require.Len(t, steps, 1)
	assert.Equal(t, corev1.PodSucceeded, steps[0].Status.Phase)
	r := steps[0].Spec.Containers[0].Resources
	assert.Equal(t, "10m", r.Requests.Cpu().String())
	assert.Equal(t, "100m", r.Limits.Cpu().String())
	assert.Equal(t, "16Mi", r.Requests.Memory().String())
	assert.Equal(t, "64Mi", r.Limits.Memory().String())
}

// podResources records the limits of every pod that matches a selector, from a watch
// started before they exist (successful hook pods are deleted right away).
type podResources struct {
	mu     sync.Mutex
	limits map[string]string
}

func watchPodResources(t *testing.T, ns, selector string) *podResources {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	pr := &podResources{limits: map[string]string{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && len(p.Spec.Containers) > 0 {
				l := p.Spec.Containers[0].Resources.Limits
				pr.mu.Lock()
				pr.limits[p.Name] = "cpu=" + l.Cpu().String() + ",memory=" + l.Memory().String()
				pr.mu.Unlock()
			}
		}
	}()
	return pr
}

// seen is the limits of the pods seen, one entry per pod, sorted.
func (pr *podResources) seen() []string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	out := make([]string, 0, len(pr.limits))
	for _, l := range pr.limits {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// A quota that is full refuses the deployer pod with "exceeded quota": the revision waits
// (New, never Failed), the DC's Progressing condition names the quota, and kubectl
// stagehand get says what the deployer waits for. When the quota has room, the rollout
// goes on by itself and completes.
func TestFullQuotaDelaysARolloutAndNamesTheQuota(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	createQuota(t, s.NS, "tight", quantities("pods", "0"))

	s.When().Created().Then().DeploymentConfig("waiting for quota tight", func(dc *stagehandv1.DeploymentConfig) bool {
		c := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
		return c != nil && c.Reason == stagehandv1.ReasonDeployerPodWaiting
	})
	got, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status, "waiting is not failing")
	assert.Contains(t, c.Message, "revision web-1 is waiting")
	assert.Contains(t, c.Message, "exceeded quota: tight")
	t.Logf("Progressing: %s: %s", c.Reason, c.Message)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(stagehandv1.RevisionPhaseNew), rs.Annotations[stagehandv1.PhaseAnnotation])
	tree := plugin(t, s.NS, "get", "dc/web", "--ascii")
	assert.Contains(t, tree.Stdout, "Not created yet")
	assert.Contains(t, tree.Stdout, "exceeded quota: tight", "get says what the deployer waits for:\n%s", tree.Stdout)

	// Some seconds of refusals later, the quota gets room: the rollout goes on by itself.
	time.Sleep(3 * time.Second)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := env.Kube.CoreV1().ResourceQuotas(s.NS).Get(ctx, "tight", metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Hard = quantities("pods", "10")
		_, err = env.Kube.CoreV1().ResourceQuotas(s.NS).Update(ctx, q, metav1.UpdateOptions{})
		return err
	}))
	// Complete is terminal and phases only move forward: the revision never failed.
	s.When().Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete).ReadyPods(1)
	rs, err = env.Kube.AppsV1().ReplicaSets(s.NS).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, rs.Annotations, stagehandv1.WaitingAnnotation, "the wait is over")
	warnings := strings.Join(warningEvents(t, s.NS), "\n")
	assert.Contains(t, warnings, "exceeded quota: tight", "the refusal was an event too")
}
