//go:build e2e

package e2e

// DESIGN.md §4 invariant 8, for BeforeScaleDown: the pods whose steps ran are exactly the
// pods that Stagehand's scale-down removes (issue 22 item 3: in 2 of 6 runs of a 3 → 1
// scale-down, three pods ran their steps). Each repetition compares two sets of names:
// the pods a step ran for (the step pods' stagehand.dev/defer-step-for) and the pods that
// got a deletionTimestamp (a watch).

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// exactRepetitions of each kind of scale-down.
const exactRepetitions = 20

// exactScenario is a DC "web" whose pods a one-step BeforeScaleDown policy selects; the
// step only prints its pod's name, so that a repetition takes seconds.
func exactScenario(t *testing.T, replicas int32, strategy stagehandv1.DeploymentStrategyType) (*framework.Given, *podHistory) {
	t.Helper()
	s := env.Given(t)
	createDeferPolicy(t, s.NS, "web", func(p *stagehandv1.DeferPolicy) { p.Spec.When = stagehandv1.DeferBeforeScaleDown },
		stagehandv1.DeferStep{Name: "drain", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo $STAGEHAND_POD_NAME"}})
	scenario := s.DeploymentConfig(framework.NewDeploymentConfig("web", replicas, strategy))
	scenario.When().Created().Then().RevisionPhase(1, complete).ReadyPods(int(replicas))
	return scenario, followPods(t, s.NS, "app=web")
}

// settled waits until the namespace has want ready pods of app=web, none being deleted,
// and no ReplicaSet in the middle of a deferred scale-down.
func settled(t *testing.T, ns string, want int) {
	t.Helper()
	env.WaitForPods(t, ns, "app=web", deferTimeout, fmt.Sprintf("%d ready pods, none terminating", want), func(ps []*corev1.Pod) bool {
		ready := 0
		for _, p := range ps {
			if p.DeletionTimestamp != nil {
				return false
			}
			if framework.PodReady(p) {
				ready++
			}
		}
		return ready == want && len(ps) == want
	})
	require.Eventually(t, func() bool {
		list, err := env.Kube.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, rs := range list.Items {
			if inScaleDown(&rs) {
				return false
			}
		}
		return true
	}, deferTimeout, 100*time.Millisecond, "no ReplicaSet in a deferred scale-down")
}

func inScaleDown(rs *appsv1.ReplicaSet) bool {
	for _, a := range []string{stagehandv1.DeferScaleDownToAnnotation, stagehandv1.DeferScaleDownChoiceAnnotation, stagehandv1.DeferScaleDownRemovingAnnotation} {
		if _, ok := rs.Annotations[a]; ok {
			return true
		}
	}
	return false
}

// stepped names the pods that a defer step ran for, in the whole namespace.
func stepped(t *testing.T, ns string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.DeferStepOfLabel})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range list.Items {
		seen[p.Annotations[stagehandv1.DeferStepForAnnotation]] = true
	}
	return sortedKeys(seen)
}

// deletedNames names the pods the watch saw deleted.
func (h *podHistory) deletedNames() []string {
	_, deleted, _ := h.snapshot()
	seen := map[string]bool{}
	for name := range deleted {
		seen[name] = true
	}
	return sortedKeys(seen)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// assertExact compares, after repetition i, every pod whose steps ran with every pod that
// was deleted: the names accumulate over the repetitions, and pod names are not reused.
func assertExact(t *testing.T, ns string, h *podHistory, i int, wantDeleted int) bool {
	t.Helper()
	ran, deleted := stepped(t, ns), h.deletedNames()
	ok := assert.Equal(t, deleted, ran, "repetition %d: the pods whose steps ran (want) must be the pods that were deleted (got)", i)
	return assert.Len(t, deleted, wantDeleted, "repetition %d: pods deleted so far", i) && ok
}

func TestDeferBeforeScaleDownExactWhenScaledDown(t *testing.T) {
	requireController(t)
	scenario, history := exactScenario(t, 3, stagehandv1.DeploymentStrategyTypeRecreate)
	ns := scenario.NS
	for i := 1; i <= exactRepetitions; i++ {
		// When kubectl scale dc/web --replicas=1
		scenario.When().Scaled(1)
		settled(t, ns, 1)
		// Then the two pods that went are the two whose steps ran
		if !assertExact(t, ns, history, i, 2*i) {
			t.Log(env.DescribeEvents(ns))
			return
		}
		scenario.When().Scaled(3)
		settled(t, ns, 3)
	}
}

func TestDeferBeforeScaleDownExactInARollingRollout(t *testing.T) {
	requireController(t)
	scenario, history := exactScenario(t, 3, stagehandv1.DeploymentStrategyTypeRolling)
	ns := scenario.NS
	for i := 1; i <= exactRepetitions; i++ {
		// When a new template rolls out, 3 to 3
		scenario.When().TemplateChanged(i+1).Then().RevisionPhase(int64(i+1), complete)
		settled(t, ns, 3)
		// Then every old pod went, each after its steps, and no new pod ran them
		if !assertExact(t, ns, history, i, 3*i) {
			t.Log(env.DescribeEvents(ns))
			return
		}
	}
}
