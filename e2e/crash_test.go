//go:build e2e

package e2e

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// The invariants of DESIGN.md §4 hold when the controller's process is killed at random
// moments during a series of rollouts: every revision ends terminal, every revision had
// exactly one deployer pod, latestVersion counts the revisions, and the last template is
// what runs.
func TestCrashSafetyControllerKilledDuringTenRollouts(t *testing.T) {
	requireController(t)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d", seed)

	s := env.Given(t).DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s.When().Created().Then().RevisionPhase(1, complete)

	const changes, kills = 10, 6
	for v := 2; v <= changes; v++ {
		s.When().TemplateChanged(v)
		if v-1 <= kills {
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
			env.KillController(t)
		}
		if v%3 == 0 {
			// Now and then let a rollout finish, so that kills land in every phase.
			env.WaitForController(t)
			s.Then().DeploymentConfig("the latest revision terminal", func(dc *stagehandv1.DeploymentConfig) bool {
				return dc.Status.Phase.IsTerminal() && dc.Status.ObservedGeneration == dc.Generation
			})
		}
	}

	// Then the last template rolls out
	env.WaitForController(t)
	final := s.Then().DeploymentConfig("the final template Complete", func(dc *stagehandv1.DeploymentConfig) bool {
		return dc.Status.ObservedGeneration == dc.Generation && dc.Status.Phase == complete
	}).Get()
	latest := final.Status.LatestVersion
	s.Then().ReadyPods(2)

	rss, err := env.Kube.AppsV1().ReplicaSets(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=web"})
	require.NoError(t, err)
	assert.Len(t, rss.Items, int(latest), "latestVersion must count the revisions")
	seen := map[string]bool{}
	for _, rs := range rss.Items {
		seen[rs.Name] = true
		phase := stagehandv1.RevisionPhase(rs.Annotations[stagehandv1.PhaseAnnotation])
		assert.True(t, phase.IsTerminal(), "revision %s ended in phase %q", rs.Name, phase)
		if rs.Name == stagehandv1.RevisionName("web", latest) {
			assert.Contains(t, rs.Annotations[stagehandv1.ConfigSnapshotAnnotation], `"value":"`+strconv.Itoa(changes)+`"`,
				"the latest revision must hold the last template")
			assert.Equal(t, int32(2), *rs.Spec.Replicas)
		} else {
			assert.Equal(t, int32(0), *rs.Spec.Replicas, "old revision %s must run no pods", rs.Name)
		}
	}
	for n := int64(1); n <= latest; n++ {
		assert.True(t, seen[stagehandv1.RevisionName("web", n)], "revision %d is missing: revision numbers must have no gaps", n)
	}
	s.Then().OneDeployerPodPerRevision(latest)
}

// Rollout requests survive a controller killed right after each one: every request is
// answered exactly once (no lost and no doubled revision), a retry reruns the same
// revision with one new deployer pod, and the causes are recorded.
func TestCrashSafetyRolloutRequestsAcrossControllerKills(t *testing.T) {
	requireController(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d", seed)
	killSoon := func() {
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		env.KillController(t)
	}

	// Given a manual-only config whose pre hook passes while a ConfigMap says so
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{}
	hook := framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, `test "$READY" = yes`)
	hook.ExecNewPod.Env = []corev1.EnvVar{{Name: "READY", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "ready"}}}}
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{Pre: hook}
	s := env.Given(t).DeploymentConfig(dc)
	flags := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flags"}, Data: map[string]string{"ready": "yes"}}
	_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Create(ctx, flags, metav1.CreateOptions{})
	require.NoError(t, err)
	setReady := func(v string) {
		flags.Data["ready"] = v
		_, err := env.Kube.CoreV1().ConfigMaps(s.NS).Update(ctx, flags, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	s.When().Created()

	// When two manual rollouts are each followed by a kill
	for n := int64(1); n <= 2; n++ {
		pluginOK(t, s.NS, "rollout", "latest", "dc/web")
		killSoon()
		s.Then().RevisionPhase(n, complete)
	}
	// And a failed third one is retried, and killed
	setReady("no")
	pluginOK(t, s.NS, "rollout", "latest", "dc/web")
	s.Then().RevisionPhase(3, failed)
	setReady("yes")
	pluginOK(t, s.NS, "rollout", "retry", "dc/web")
	killSoon()
	s.Then().RevisionPhase(3, complete)
	// And a rollback is killed too
	pluginOK(t, s.NS, "rollout", "undo", "dc/web", "--to-revision", "1")
	killSoon()
	s.Then().RevisionPhase(4, complete).ReadyPods(1)

	// Then there are exactly four revisions with their causes, all Complete
	env.WaitForController(t)
	assert.Equal(t, int64(4), s.Get().Status.LatestVersion)
	rss, err := env.Kube.AppsV1().ReplicaSets(s.NS).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=web"})
	require.NoError(t, err)
	causes := map[string]string{}
	for _, rs := range rss.Items {
		causes[rs.Name] = rs.Annotations[stagehandv1.CauseAnnotation] + "/" + rs.Annotations[stagehandv1.PhaseAnnotation]
	}
	assert.Equal(t, map[string]string{"web-1": "Manual/Complete", "web-2": "Manual/Complete", "web-3": "Manual/Complete",
		"web-4": "Rollback/Complete"}, causes)
	// And one deployer pod per run: the retried revision had two runs
	assert.Equal(t, map[string]int{"web-1-deploy": 1, "web-2-deploy": 1, "web-3-deploy": 2, "web-4-deploy": 1}, s.Deployers())
}

// DESIGN.md §4 invariant 10 across controller kills: the controller is killed twice while
// a fix forward from a Freeze rolls out (its pods become ready only after 6 s), and the
// floor desired − maxUnavailable still holds from the change to the end.
func TestCrashSafetyFixForwardFromFreezeKeepsTheFloor(t *testing.T) {
	requireController(t)
	s := frozenAtPostHook(t)
	ready := env.WatchReady(t, s.NS, "web")

	changed := time.Now()
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		fixForward(dc)
		slowReady(dc)
	})
	env.KillController(t)
	s.Then().DeploymentConfig("revision 3 running", func(dc *stagehandv1.DeploymentConfig) bool {
		return dc.Status.LatestVersion == 3 && dc.Status.Phase == stagehandv1.RevisionPhaseRunning
	})
	env.KillController(t)
	env.WaitForController(t)
	s.Then().RevisionPhase(3, complete).RevisionReplicas(3, 4).RevisionReplicas(2, 0).RevisionReplicas(1, 0).ReadyPods(4)

	floorHeld(t, ready, changed, time.Now(), 3)
	s.Then().OneDeployerPodPerRevision(3)
}
