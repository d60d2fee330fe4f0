//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// readyWatch records, on a watch of the app=web pods, every pod UID it saw and every
// moment a pod it had seen ready was not ready (while not being deleted).
type readyWatch struct {
	mu       sync.Mutex
	wasReady map[string]bool
	unready  []string
}

func watchNeverUnready(t *testing.T, ns string) *readyWatch {
	t.Helper()
	w := &readyWatch{wasReady: map[string]bool{}}
	see := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		ready := framework.PodReady(p) && p.DeletionTimestamp == nil
		if w.wasReady[string(p.UID)] && !ready {
			w.unready = append(w.unready, p.Name)
		}
		if ready {
			w.wasReady[string(p.UID)] = true
		}
	}
	env.InformPods(t, ns, "app=web", cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				w.mu.Lock()
				w.unready = append(w.unready, p.Name+" (deleted)")
				w.mu.Unlock()
			}
		}})
	return w
}

func webDeployment(replicas int32) *appsv1.Deployment {
	dc := framework.NewDeploymentConfig("web", replicas, stagehandv1.DeploymentStrategyTypeRolling)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: dc.Spec.Template},
	}
}

// A running 4-replica Deployment is adopted: the same pods (UIDs), never unready, become
// revision 1, Complete 4/4; the Deployment is gone; the next change rolls out revision 2.
func TestAdoptKeepsEveryPod(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	// A Deployment with history: version 1, then version 2 (its first ReplicaSet at 0)
	_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, webDeployment(4), metav1.CreateOptions{})
	require.NoError(t, err)
	d2 := webDeployment(4)
	framework.SetVersion(&stagehandv1.DeploymentConfig{Spec: stagehandv1.DeploymentConfigSpec{Template: d2.Spec.Template}}, 2)
	require.Eventually(t, func() bool {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		d.Spec.Template = d2.Spec.Template
		_, err = env.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err == nil
	}, 10*time.Second, 100*time.Millisecond)
	env.WaitForPods(t, ns, "app=web", framework.RolloutTimeout, "4 ready pods of version 2, and no other", func(pods []*corev1.Pod) bool {
		ready := 0
		for _, p := range pods {
			if framework.PodReady(p) && p.Spec.Containers[0].Env[0].Value == "2" {
				ready++
			}
		}
		return ready == 4 && len(pods) == 4
	})
	before, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	watched := watchNeverUnready(t, ns)

	dry := pluginOK(t, ns, "adopt", "deployment/web", "--dry-run=server", "-o", "yaml")
	assert.Contains(t, dry.Stdout, "kind: DeploymentConfig")
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a server dry run creates nothing")

	out := pluginOK(t, ns, "adopt", "deployment/web")
	assert.Contains(t, out.Stdout, "deployment/web adopted")

	_, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Deployment is gone")
	left, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: appsv1.DefaultDeploymentUniqueLabelKey})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "the Deployment's ReplicaSets are gone, the older one at 0 included")
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(stagehandv1.RevisionPhaseComplete), rs.Annotations[stagehandv1.PhaseAnnotation])
	assert.Equal(t, int32(4), rs.Status.ReadyReplicas)
	require.Eventually(t, func() bool {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && dc.Status.LatestVersion == 1 && dc.Status.Phase == stagehandv1.RevisionPhaseComplete &&
			dc.Status.ReadyReplicas == 4 && dc.Status.AvailableReplicas == 4
	}, 30*time.Second, 200*time.Millisecond, "the DC shows revision 1 Complete with 4/4")
	assert.Equal(t, "deployment/web", rs.Annotations[stagehandv1.AdoptedFromAnnotation])
	get := pluginOK(t, ns, "get", "dc/web")
	assert.Contains(t, get.Stdout, "adopted from deployment/web")
	assert.NotContains(t, get.Stdout, "web-1-deploy", "an adopted revision never had a deployer pod")
	after, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	uids := func(l *corev1.PodList) []string {
		var out []string
		for _, p := range l.Items {
			out = append(out, string(p.UID))
		}
		return out
	}
	assert.ElementsMatch(t, uids(before), uids(after), "the same pods, by UID")
	for _, p := range after.Items {
		ref := metav1.GetControllerOfNoCopy(&p)
		require.NotNil(t, ref, p.Name)
		assert.Equal(t, "web-1", ref.Name, "%s belongs to revision 1", p.Name)
	}
	watched.mu.Lock()
	assert.Empty(t, watched.unready, "no pod was ever not ready")
	watched.mu.Unlock()
	deployers, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.DeployerPodForLabel})
	require.NoError(t, err)
	assert.Empty(t, deployers.Items, "no deployer ran for the adoption")

	// The next change is the first rollout, with the DC's hooks
	pluginOK(t, ns, "set", "deployment-hook", "dc/web", "--post", "--", "/bin/sh", "-c", "echo post hook after the adoption")
	pluginOK(t, ns, "set", "image", "dc/web", "app="+imageOf(2))
	require.Eventually(t, func() bool {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && dc.Status.LatestVersion == 2 && dc.Status.Phase == stagehandv1.RevisionPhaseComplete &&
			dc.Status.ReadyReplicas == 4 && dc.Status.Replicas == 4
	}, framework.RolloutTimeout, 200*time.Millisecond, "revision 2 rolls out")
	assert.Contains(t, deployerLog(t, ns, "web-2"), "post hook after the adoption")

	// eject: a Deployment takes the same pods over, and kubectl rollout restart works on it
	running, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	ejected := watchNeverUnready(t, ns)
	out = pluginOK(t, ns, "eject", "dc/web", "--yes") // the post hook has no Deployment equivalent
	assert.Contains(t, out.Stdout, "deploymentconfig/web ejected")
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the DeploymentConfig is gone")
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, d.Spec.Paused)
	now, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	assert.ElementsMatch(t, uids(running), uids(now), "the same pods serve the Deployment")
	ejected.mu.Lock()
	assert.Empty(t, ejected.unready, "no pod was ever not ready during eject")
	ejected.mu.Unlock()
	_, err = env.Kubectl(ns, "rollout", "restart", "deployment/web")
	require.NoError(t, err)
	_, err = env.Kubectl(ns, "rollout", "status", "deployment/web", "--timeout=120s")
	require.NoError(t, err)
	restarted, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	assert.NotEqual(t, uids(now), uids(restarted), "rollout restart replaced the pods")
}

// adopt refuses, naming the reason, a name a DeploymentConfig already has and a
// Deployment that an HPA scales; nothing is changed.
func TestAdoptRefusals(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, webDeployment(1), metav1.CreateOptions{})
	require.NoError(t, err)
	env.WaitForPods(t, ns, "app=web", framework.RolloutTimeout, "1 pod", func(pods []*corev1.Pod) bool { return len(pods) == 1 })
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{}
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating")}
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	r := plugin(t, ns, "adopt", "deployment/web")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "a DeploymentConfig named web exists")
	_, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err, "the Deployment is left alone")

	// eject says what a Deployment cannot carry, and wants --yes for it
	r = plugin(t, ns, "eject", "dc/web")
	assert.NotZero(t, r.ExitCode)
	assert.Contains(t, r.Stderr, "the pre hook")
	assert.Contains(t, r.Stderr, "nothing was changed; run again with --yes")
	_, err = env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err, "the DeploymentConfig is left alone")
}
