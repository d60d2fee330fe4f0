//go:build e2e

package e2e

// BeforeScaleDown DeferPolicies (docs/defer.md): when Stagehand lowers a revision's
// replicas, the pods that go run the steps first, while they still run, and only then
// get their deletionTimestamp; the rollout's availability floor holds meanwhile.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// podHistory follows every pod of a namespace from a watch: when each one's defer run got
// an outcome, when it got its deletionTimestamp, and the fewest ready, not terminating
// pods of one revision set seen at any moment.
type podHistory struct {
	mu        sync.Mutex
	pods      map[string]*corev1.Pod
	chosen    map[string]time.Time
	outcome   map[string]time.Time
	deleted   map[string]time.Time
	minActive int
	counting  bool
}

func followPods(t *testing.T, ns, selector string) *podHistory {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	h := &podHistory{pods: map[string]*corev1.Pod{}, chosen: map[string]time.Time{}, outcome: map[string]time.Time{}, deleted: map[string]time.Time{}, minActive: 1 << 30}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			h.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(h.pods, pod.Name)
			} else {
				h.pods[pod.Name] = pod
			}
			if _, ok := h.chosen[pod.Name]; !ok && stagehandv1.DeferScaleDownMarkOf(pod) != "" {
				h.chosen[pod.Name] = now
			}
			if run, err := stagehandv1.DeferRunOf(pod); err == nil && run != nil && run.Done() {
				if _, ok := h.outcome[pod.Name]; !ok {
					h.outcome[pod.Name] = now
				}
			}
			if pod.DeletionTimestamp != nil {
				if _, ok := h.deleted[pod.Name]; !ok {
					h.deleted[pod.Name] = now
				}
			}
			if h.counting {
				active := 0
				for _, p := range h.pods {
					if p.DeletionTimestamp == nil && framework.PodReady(p) {
						active++
					}
				}
				h.minActive = min(h.minActive, active)
			}
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *podHistory) startCounting() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counting = true
}

func (h *podHistory) snapshot() (outcome, deleted map[string]time.Time, minActive int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	outcome, deleted = map[string]time.Time{}, map[string]time.Time{}
	for k, v := range h.outcome {
		outcome[k] = v
	}
	for k, v := range h.deleted {
		deleted[k] = v
	}
	return outcome, deleted, h.minActive
}

// createScaleDownPolicy creates a BeforeScaleDown policy for app=<app> whose one step
// prints the pod it runs for.
func createScaleDownPolicy(t *testing.T, ns, app string) {
	t.Helper()
	createDeferPolicy(t, ns, app, func(p *stagehandv1.DeferPolicy) { p.Spec.When = stagehandv1.DeferBeforeScaleDown },
		stagehandv1.DeferStep{Name: "drain", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo drained $STAGEHAND_POD_NAME; sleep 1"}})
}

// checkStepsBeforeDeletion asserts that each of pods had a Completed BeforeScaleDown run,
// seen on a watch before its deletionTimestamp, and a succeeded step pod that names it.
func checkStepsBeforeDeletion(t *testing.T, ns string, pods []*corev1.Pod, outcome, deleted map[string]time.Time) {
	t.Helper()
	for _, p := range pods {
		done, ok := outcome[p.Name]
		if !assert.True(t, ok, "pod %s: no defer outcome was seen", p.Name) {
			continue
		}
		gone, ok := deleted[p.Name]
		if assert.True(t, ok, "pod %s was never deleted", p.Name) {
			assert.True(t, done.Before(gone), "pod %s: the steps ended at %s, after its deletionTimestamp appeared at %s",
				p.Name, done.Format(time.StampMilli), gone.Format(time.StampMilli))
		}
		steps := stepPods(t, ns, string(p.UID))
		if assert.Len(t, steps, 1, "pod %s: one step pod", p.Name) {
			assert.Equal(t, corev1.PodSucceeded, steps[0].Status.Phase)
			assert.Equal(t, "drained "+p.Name+"\n", podLog(t, ns, steps[0].Name))
			assert.Equal(t, p.Spec.NodeName, steps[0].Spec.NodeName)
		}
	}
}

func TestDeferBeforeScaleDownInARollingRollout(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	createScaleDownPolicy(t, s.NS, "web")
	scenario := s.DeploymentConfig(framework.NewDeploymentConfig("web", 4, stagehandv1.DeploymentStrategyTypeRolling))
	scenario.When().Created().Then().RevisionPhase(1, complete).ReadyPods(4)
	old, err := env.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web," + stagehandv1.RevisionLabel + "=1"})
	require.NoError(t, err)
	require.Len(t, old.Items, 4)
	history := followPods(t, s.NS, "app=web")
	require.Eventually(t, func() bool {
		history.mu.Lock()
		defer history.mu.Unlock()
		return len(history.pods) == 4
	}, podTimeout, 50*time.Millisecond, "the watch to see the four pods")
	history.startCounting()

	// When a new template rolls out, 4 to 4 replicas (maxUnavailable 25%: at least 3 of
	// them available at every moment)
	scenario.When().TemplateChanged(2).Then().RevisionPhase(2, complete).ReadyPods(4)

	// Then every old pod ran the steps before it got its deletionTimestamp
	outcome, deleted, minActive := history.snapshot()
	var pods []*corev1.Pod
	for i := range old.Items {
		pods = append(pods, &old.Items[i])
	}
	checkStepsBeforeDeletion(t, s.NS, pods, outcome, deleted)
	assert.GreaterOrEqual(t, minActive, 3, "the availability floor (4 replicas, maxUnavailable 25%)")
	log, err := env.Kubectl(s.NS, "logs", stagehandv1.DeployerPodName(stagehandv1.RevisionName("web", 2)))
	if err == nil {
		assert.Contains(t, log, "once DeferPolicy web has run its BeforeScaleDown steps")
	}
}

func TestDeferBeforeScaleDownWhenTheDCIsScaledDown(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	createScaleDownPolicy(t, s.NS, "web")
	scenario := s.DeploymentConfig(framework.NewDeploymentConfig("web", 3, stagehandv1.DeploymentStrategyTypeRecreate))
	scenario.When().Created().Then().RevisionPhase(1, complete).ReadyPods(3)
	history := followPods(t, s.NS, "app=web")

	// When kubectl scale dc/web --replicas=1
	out, err := env.Kubectl(s.NS, "scale", "dc/web", "--replicas=1")
	require.NoError(t, err, out)

	// Then exactly the two pods that go ran the steps, before their deletion
	pods := env.WaitForPods(t, s.NS, "app=web", deferTimeout, "one pod left", func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].DeletionTimestamp == nil
	})
	survivor := pods[0]
	outcome, deleted, _ := history.snapshot()
	assert.NotContains(t, outcome, survivor.Name, "the pod that stays runs no step")
	assert.NotContains(t, survivor.Annotations, stagehandv1.DeferRunAnnotation)
	var gone []*corev1.Pod
	history.mu.Lock()
	for name := range deleted {
		gone = append(gone, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	history.mu.Unlock()
	require.Len(t, gone, 2, "two pods go")
	// The deleted pods' UIDs and nodes, from their step pods' labels
	for _, p := range gone {
		list, err := env.Kube.CoreV1().Pods(s.NS).List(context.Background(), metav1.ListOptions{LabelSelector: stagehandv1.DeferStepOfLabel})
		require.NoError(t, err)
		for _, sp := range list.Items {
			if sp.Annotations[stagehandv1.DeferStepForAnnotation] == p.Name {
				p.UID = types.UID(sp.Labels[stagehandv1.DeferStepOfLabel])
				p.Spec.NodeName = sp.Spec.NodeName
			}
		}
	}
	checkStepsBeforeDeletion(t, s.NS, gone, outcome, deleted)
	scenario.Then().RevisionReplicas(1, 1)
}
