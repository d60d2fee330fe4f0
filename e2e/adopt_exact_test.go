//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// givenRunningDeployment creates d in ns and waits until its n pods are ready, and no
// other; it returns their UIDs.
func givenRunningDeployment(t *testing.T, ns string, d *appsv1.Deployment) []string {
	t.Helper()
	_, err := env.Kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	require.NoError(t, err)
	return waitReadyWeb(t, ns, ptr.Deref(d.Spec.Replicas, 1), "")
}

// waitReadyWeb waits until the app=web pods are n, all ready (with env VERSION=version
// unless version is empty), and returns their UIDs.
func waitReadyWeb(t *testing.T, ns string, n int32, version string) []string {
	t.Helper()
	pods := env.WaitForPods(t, ns, "app=web", framework.RolloutTimeout, "ready app=web pods, and no other", func(pods []*corev1.Pod) bool {
		ready := 0
		for _, p := range pods {
			if framework.PodReady(p) && (version == "" || envOf(p.Spec.Containers[0], "VERSION") == version) {
				ready++
			}
		}
		return ready == int(n) && len(pods) == int(n)
	})
	uids := make([]string, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	return uids
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// webPodsOwnedBy asserts that the app=web pods are exactly uids, each controlled by rs.
func webPodsOwnedBy(t *testing.T, ns, rs string, uids []string) {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	var now []string
	for _, p := range pods.Items {
		now = append(now, string(p.UID))
		if ref := metav1.GetControllerOfNoCopy(&p); assert.NotNil(t, ref, p.Name) {
			assert.Equal(t, rs, ref.Name, "%s belongs to %s", p.Name, rs)
		}
	}
	assert.ElementsMatch(t, uids, now, "the same pods, by UID, and no other")
}

func updateDeployment(t *testing.T, ns string, mutate func(*appsv1.Deployment)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(d)
		_, err = env.Kube.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	}))
}

func setVersion(d *appsv1.Deployment, version string) {
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: version}}
}

func getDC(t *testing.T, ns string) *stagehandv1.DeploymentConfig {
	t.Helper()
	dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return dc
}

// A paused Deployment holds a template its pods do not run: revision 1 is what they run,
// and the Deployment's template waits in the paused DC as revision 2, rolled out on resume.
func TestAdoptPausedDeploymentKeepsWhatItsPodsRun(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	d := webDeployment(2)
	setVersion(d, "1")
	uids := givenRunningDeployment(t, ns, d)
	updateDeployment(t, ns, func(d *appsv1.Deployment) { d.Spec.Paused = true; setVersion(d, "2") })

	out := pluginOK(t, ns, "adopt", "deployment/web", "--timeout=60s")

	assert.Contains(t, out.Stderr, "revision 1 is what they run")
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", envOf(rs.Spec.Template.Spec.Containers[0], "VERSION"), "revision 1 records the template its pods run")
	webPodsOwnedBy(t, ns, "web-1", uids)
	dc := getDC(t, ns)
	assert.True(t, dc.Spec.Paused, "paused as the Deployment was")
	assert.Equal(t, "2", envOf(dc.Spec.Template.Spec.Containers[0], "VERSION"), "the Deployment's template waits in the DC")
	assert.NotContains(t, dc.Annotations, stagehandv1.AdoptAnnotation, "the adoption is finished")
	assert.Equal(t, int64(1), dc.Status.LatestVersion, "nothing rolls out while paused")

	pluginOK(t, ns, "rollout", "resume", "dc/web")
	waitReadyWeb(t, ns, 2, "2")
	assert.Equal(t, int64(2), getDC(t, ns).Status.LatestVersion, "the waiting template is revision 2")
}

// progressDeadlineSeconds 2147483647 (read as "never") maps to a DeploymentConfig that
// admission accepts: timeoutSeconds below an activeDeadlineSeconds above it.
func TestAdoptMapsALongProgressDeadline(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	d := webDeployment(1)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](2147483647)
	uids := givenRunningDeployment(t, ns, d)

	pluginOK(t, ns, "adopt", "deployment/web", "--timeout=60s")

	dc := getDC(t, ns)
	require.NotNil(t, dc.Spec.Strategy.RollingParams)
	assert.Equal(t, ptr.To[int64](2147483646), dc.Spec.Strategy.RollingParams.TimeoutSeconds)
	assert.Equal(t, ptr.To[int64](2147483647), dc.Spec.Strategy.ActiveDeadlineSeconds)
	webPodsOwnedBy(t, ns, "web-1", uids)
}

// An adoption interrupted after it created the DeploymentConfig (the state is made by
// creating the planned DC by hand) is rerun after the Deployment rolled on: the rerun
// adopts the pods that run now, with their template, not the plan's.
func TestAdoptRerunRechecksADeploymentThatRolledOn(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	d := webDeployment(2)
	setVersion(d, "1")
	givenRunningDeployment(t, ns, d)
	planned := pluginOK(t, ns, "adopt", "deployment/web", "--dry-run=client", "-o", "yaml")
	file := filepath.Join(t.TempDir(), "dc.yaml")
	require.NoError(t, os.WriteFile(file, []byte(planned.Stdout), 0o600))
	_, err := env.Kubectl(ns, "create", "-f", file)
	require.NoError(t, err)
	updateDeployment(t, ns, func(d *appsv1.Deployment) { setVersion(d, "2") })
	uids := waitReadyWeb(t, ns, 2, "2")
	require.Eventually(t, func() bool {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 2 && d.Status.Replicas == 2
	}, time.Minute, 200*time.Millisecond, "the Deployment rolled on")

	out := pluginOK(t, ns, "adopt", "deployment/web", "--timeout=30s")

	assert.Contains(t, out.Stderr, "an adoption was interrupted; finishing it")
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", envOf(rs.Spec.Template.Spec.Containers[0], "VERSION"), "revision 1 is what runs now")
	webPodsOwnedBy(t, ns, "web-1", uids)
	assert.NotContains(t, getDC(t, ns).Annotations, stagehandv1.AdoptAnnotation, "the adoption is finished")
}

// A Deployment whose controller has not caught up (observedGeneration < generation: here
// kube-controller-manager is stopped for 25 s) is adopted like a paused one: revision 1 is
// the template its pods run, and the new template becomes revision 2, rolled out once the
// pods are handed over (the DC is not paused).
func TestAdoptDeploymentItsControllerHasNotCaughtUp(t *testing.T) {
	requireController(t)
	if env.Cluster() == nil {
		t.Skip("stops kube-controller-manager, which only the local cluster lets a test do")
	}
	ns := env.Namespace(t)
	d := webDeployment(2)
	setVersion(d, "1")
	uids := givenRunningDeployment(t, ns, d)
	restarted := make(chan error, 1)
	go func() {
		restarted <- env.Cluster().RestartComponent(context.Background(), "kube-controller-manager", 25*time.Second)
	}()
	t.Cleanup(func() { require.NoError(t, <-restarted, "restarting kube-controller-manager") })
	waitDeploymentControllerDown(t, ns)

	updateDeployment(t, ns, func(d *appsv1.Deployment) { setVersion(d, "2") })
	live, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Less(t, live.Status.ObservedGeneration, live.Generation, "the Deployment controller has not seen the change")

	out := pluginOK(t, ns, "adopt", "deployment/web", "--timeout=120s")

	assert.Contains(t, out.Stderr, "revision 1 is what they run")
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", envOf(rs.Spec.Template.Spec.Containers[0], "VERSION"), "revision 1 records the template its pods run")
	assert.False(t, getDC(t, ns).Spec.Paused)
	waitReadyWeb(t, ns, 2, "2")
	assert.Equal(t, int64(2), getDC(t, ns).Status.LatestVersion, "the template the pods did not run is revision 2")
	assert.NotContains(t, uids, waitReadyWeb(t, ns, 2, "2")[0], "revision 2's pods are new ones")
}

// waitDeploymentControllerDown waits until a probe Deployment's spec change stays unseen
// (observedGeneration < generation) for 2 s: the Deployment controller is not running.
func waitDeploymentControllerDown(t *testing.T, ns string) {
	t.Helper()
	probes := env.Kube.AppsV1().Deployments(ns)
	probe := webDeployment(0)
	probe.Name = "probe"
	probe.Spec.Selector.MatchLabels = map[string]string{"app": "probe"}
	probe.Spec.Template.Labels = map[string]string{"app": "probe"}
	_, err := probes.Create(context.Background(), probe, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := probes.Get(context.Background(), "probe", metav1.GetOptions{})
		if err != nil {
			return false
		}
		p.Spec.MinReadySeconds++
		if p, err = probes.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			return false
		}
		time.Sleep(2 * time.Second)
		seen, err := probes.Get(context.Background(), "probe", metav1.GetOptions{})
		return err == nil && seen.Status.ObservedGeneration < p.Generation
	}, 20*time.Second, 100*time.Millisecond, "kube-controller-manager never stopped")
}
