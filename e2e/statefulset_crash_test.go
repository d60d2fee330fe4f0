//go:build e2e

package e2e

// A StatefulSet DC's rollout, rollback and BeforeScaleDown scale-down, each with the
// controller's process killed (SIGKILL) at random moments in it, as the crash suite does
// for ReplicaSet DCs: the walk keeps its order and its one-unavailable bound, the stuck pod
// is still replaced, the steps run once for exactly the ordinals that go, every revision
// had one deployer pod, and no claim is lost.

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestStatefulSetCrashSafetyControllerKilledDuringRolloutRollbackAndScaleDown(t *testing.T) {
	requireController(t)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d", seed)
	killSoon := func() {
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		env.KillController(t)
	}
	given := env.Given(t)
	ns := given.NS
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	s := given.DeploymentConfig(statefulDC(ns))
	s.When().Created()
	waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	claims := claimUIDs(t, ns)
	require.Len(t, claims, 3)
	rec := recordOrdinals(t, ns)
	rec.mu.Lock()
	rec.maxUnavailable = 0
	rec.mu.Unlock()
	update := func(mutate func(*stagehandv1.DeploymentConfig)) { updateDB(t, ns, mutate) }

	// A rollout, with two kills during it: ordinals 2, 1, 0, never two unavailable
	update(func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2) })
	killSoon()
	killSoon()
	env.WaitForController(t)
	two := waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseComplete)
	rec.mu.Lock()
	assert.Equal(t, []string{"db-2", "db-1", "db-0"}, rec.firstOn[revision.TemplateHash(two)])
	assert.LessOrEqual(t, rec.maxUnavailable, 1, "never more than one pod unavailable")
	rec.mu.Unlock()

	// A revision that never becomes Ready fails and rolls back, with kills as it does: the
	// stuck pod is still replaced, and every pod is Ready on revision 2's template
	update(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Strategy.RollingParams.TimeoutSeconds = ptr.To[int64](15)
		neverReady(dc)
	})
	waitForStatefulRevision(t, ns, 3, stagehandv1.RevisionPhaseFailed)
	env.KillController(t)
	killSoon()
	env.WaitForController(t)
	podsOnHash(t, ns, revision.TemplateHash(two))

	// A scale from 3 to 1 with BeforeScaleDown steps, with a kill during them: the steps
	// ran once for db-2 and once for db-1, and never for db-0
	createScaleDownPolicy(t, ns, "db")
	pods := map[string]*corev1.Pod{}
	for _, p := range env.WaitForPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel+",!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel,
		podTimeout, "3 pods", func(ps []*corev1.Pod) bool { return len(ps) == 3 }) {
		pods[p.Name] = p
	}
	out, err := env.Kubectl(ns, "scale", "dc/db", "--replicas=1")
	require.NoError(t, err, out)
	killSoon()
	env.WaitForController(t)
	left := env.WaitForPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel+",!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel,
		deferTimeout, "only db-0 left", func(ps []*corev1.Pod) bool { return len(ps) == 1 && ps[0].DeletionTimestamp == nil })
	assert.Equal(t, pods["db-0"].UID, left[0].UID)
	for name, want := range map[string]int{"db-2": 1, "db-1": 1, "db-0": 0} {
		assert.Len(t, stepPods(t, ns, string(pods[name].UID)), want, "step pods of %s", name)
	}

	// And the revisions each had one deployer pod, and every claim is still there
	s.Then().OneDeployerPodPerRevision(3)
	assert.Equal(t, claims, claimUIDs(t, ns))
}
