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
