//go:build e2e

package e2e

// The scale-down of a StatefulSet DC (docs/statefulsets.md, "Scale-down"): a BeforeScaleDown
// DeferPolicy runs its steps for exactly the highest ordinals that go, one pod at a time
// from the highest, each before its pod is deleted; the claims stay.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestStatefulSetScaleDownRunsTheStepsOfTheHighestOrdinalsInOrder(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	// Given a BeforeScaleDown policy for the pods of a 3-replica StatefulSet DC that serves
	createScaleDownPolicy(t, ns, "db")
	dc := statefulDC(ns)
	dc.Spec.Strategy.RollingParams.Pre, dc.Spec.Strategy.RollingParams.Post = nil, nil
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	pods := env.WaitForPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel, podTimeout, "3 ready pods", func(ps []*corev1.Pod) bool {
		ready := 0
		for _, p := range ps {
			if p.DeletionTimestamp == nil && framework.PodReady(p) {
				ready++
			}
		}
		return ready == 3
	})
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	claims := claimUIDs(t, ns)
	require.Len(t, claims, 3)
	history := followPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel)

	// When kubectl scale dc/db --replicas=1
	out, err := env.Kubectl(ns, "scale", "dc/db", "--replicas=1")
	require.NoError(t, err, out)

	// Then db-2 and then db-1 ran the steps, each before its deletion, and db-1 was chosen
	// only once db-2's steps had ended
	left := env.WaitForPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel, deferTimeout, "only db-0 left", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].DeletionTimestamp == nil
	})
	assert.Equal(t, "db-0", left[0].Name)
	assert.Equal(t, byName["db-0"].UID, left[0].UID, "db-0 was not restarted")
	outcome, deleted, _ := history.snapshot()
	checkStepsBeforeDeletion(t, ns, []*corev1.Pod{byName["db-2"], byName["db-1"]}, outcome, deleted)
	assert.NotContains(t, outcome, "db-0", "the pod that stays runs no step")
	assert.Empty(t, stepPods(t, ns, string(byName["db-0"].UID)))
	history.mu.Lock()
	chosen1, chosen2 := history.chosen["db-1"], history.chosen["db-2"]
	history.mu.Unlock()
	require.False(t, chosen1.IsZero(), "db-1 was chosen")
	require.False(t, chosen2.IsZero(), "db-2 was chosen")
	assert.True(t, chosen2.Before(chosen1), "db-2 (chosen %s) before db-1 (chosen %s)", chosen2.Format(time.StampMilli), chosen1.Format(time.StampMilli))
	assert.True(t, outcome["db-2"].Before(chosen1), "db-1 chosen at %s, after db-2's steps ended at %s",
		chosen1.Format(time.StampMilli), outcome["db-2"].Format(time.StampMilli))

	// And every claim is still there, with its UID; the StatefulSet settles at 1
	assert.Equal(t, claims, claimUIDs(t, ns))
	require.Eventually(t, func() bool {
		set, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && *set.Spec.Replicas == 1 && !stagehandv1.InDeferScaleDown(set)
	}, podTimeout, 200*time.Millisecond, "StatefulSet db at 1 replica, with no scale-down pending")

	// When it is scaled back to 3, then a new template comes with 2 replicas: the deployer
	// of revision 2 scales down first, through the same steps
	out, err = env.Kubectl(ns, "scale", "dc/db", "--replicas=3")
	require.NoError(t, err, out)
	pods = env.WaitForPods(t, ns, "app=db,!"+stagehandv1.DeferStepOfLabel+",!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel,
		podTimeout, "3 ready pods", func(ps []*corev1.Pod) bool {
			ready := 0
			for _, p := range ps {
				if p.DeletionTimestamp == nil && framework.PodReady(p) {
					ready++
				}
			}
			return ready == 3
		})
	for _, p := range pods {
		byName[p.Name] = p
	}
	updateDB(t, ns, func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Replicas = ptr.To[int32](2)
	})
	waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseComplete)

	// Then db-2 ran its steps once, and db-1 and db-0 none: they stay, on the new template
	for name, want := range map[string]int{"db-2": 1, "db-1": 0, "db-0": 0} {
		assert.Len(t, stepPods(t, ns, string(byName[name].UID)), want, "step pods of %s", name)
	}
	log, err := env.Kubectl(ns, "logs", stagehandv1.DeployerPodName(stagehandv1.RevisionName("db", 2)))
	require.NoError(t, err, log)
	assert.Contains(t, log, "once DeferPolicy db has run its BeforeScaleDown steps for each pod that goes")
}
