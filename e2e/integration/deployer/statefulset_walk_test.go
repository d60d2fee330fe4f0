//go:build e2e

package deployer_test

// The walk of a StatefulSet revision (strategies/statefulset, docs/statefulsets.md) against
// the real StatefulSet controller: a template change held by the partition, then walked
// down from the highest ordinal, never more than one pod unavailable.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
	"github.com/stagehand-dev/stagehand/strategies/statefulset"
)

// walkRecord follows the pods of StatefulSet db: the most pods unavailable at once, and
// the order in which ordinals first ran the new template.
type walkRecord struct {
	mu             sync.Mutex
	newHash        string
	maxUnavailable int
	moved          []string
}

func (r *walkRecord) observe(pods []*corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	up := map[string]bool{}
	for _, p := range pods {
		if podAvailable(p) {
			up[p.Name] = true
		}
		if r.newHash != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] == r.newHash && !contains(r.moved, p.Name) {
			r.moved = append(r.moved, p.Name)
		}
	}
	r.maxUnavailable = max(r.maxUnavailable, 3-len(up))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// heldStatefulSet creates StatefulSet db (3 replicas, all available), changes its template
// with the partition held, and returns the new template's hash and the record of its pods.
func heldStatefulSet(t *testing.T) (ns, hash string, rec *walkRecord) {
	t.Helper()
	requireCluster(t)
	ns = framework.CreateNamespace(t, kube)
	sets := kube.AppsV1().StatefulSets(ns)
	labels := map[string]string{"app": "db"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "app", Image: testutil.SimulatedImage,
					Env: []corev1.EnvVar{{Name: "VERSION", Value: "1"}}}},
			}},
		},
	}
	_, err := sets.Create(context.Background(), set, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForSet(t, ns, "3 available pods", func(s *appsv1.StatefulSet) bool { return s.Status.AvailableReplicas == 3 })

	rec = &walkRecord{}
	recordPods(t, kube, ns, rec.observe)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := sets.Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s.Spec.Template.Spec.Containers[0].Env[0].Value = "2"
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(statefulset.HoldPartition)}}
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "changing the template with the partition held")
	held := waitForSet(t, ns, "the new template's revision", func(s *appsv1.StatefulSet) bool {
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != s.Status.CurrentRevision
	})
	rec.mu.Lock()
	rec.newHash = held.Status.UpdateRevision
	rec.mu.Unlock()
	return ns, held.Status.UpdateRevision, rec
}

func waitForSet(t *testing.T, ns, what string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var last *appsv1.StatefulSet
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = s
		return cond(s), nil
	})
	require.NoError(t, err, "StatefulSet db: %s (last status %+v)", what, last)
	return last
}

func walker(ns string, maxUnavailable *intstr.IntOrString, t *testing.T) *statefulset.Walker {
	return &statefulset.Walker{Sets: &statefulset.KubeSets{KubeClients: strategies.KubeClients{Client: kube, Namespace: ns}}, Out: strategies.NewProgress(t.Output()),
		MaxUnavailable: maxUnavailable, Timeout: time.Minute}
}

func TestStatefulSetWalkMovesTheHighestOrdinalsFirstWithinMaxUnavailable(t *testing.T) {
	ns, hash, rec := heldStatefulSet(t)

	// While held, no pod moves
	time.Sleep(2 * time.Second)
	rec.mu.Lock()
	assert.Empty(t, rec.moved, "the held partition let pods move")
	rec.mu.Unlock()

	// When the walk runs with maxUnavailable 2. A cluster whose apiserver keeps a
	// StatefulSet's maxUnavailable (the MaxUnavailableStatefulSet gate, on by default from
	// Kubernetes 1.37) takes two ordinals down at once; one that drops the field (1.36 and
	// before) must be noticed, and the walk goes one ordinal at a time
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, walker(ns, ptr.To(intstr.FromInt32(2)), t).Walk(ctx, "db", hash, 3))

	// Then every pod runs the new template, moved from the highest ordinals down to 0, and
	// never more pods were unavailable than the cluster honours
	set := waitForSet(t, ns, "all updated and available", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdatedReplicas == 3 && s.Status.AvailableReplicas == 3
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.moved, 3)
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		t.Logf("this cluster honours a StatefulSet's maxUnavailable: two ordinals at once")
		assert.ElementsMatch(t, []string{"db-2", "db-1"}, rec.moved[:2])
		assert.Equal(t, "db-0", rec.moved[2])
		assert.LessOrEqual(t, rec.maxUnavailable, 2)
	} else {
		t.Logf("this cluster drops a StatefulSet's maxUnavailable: one ordinal at a time")
		assert.Equal(t, []string{"db-2", "db-1", "db-0"}, rec.moved)
		assert.Equal(t, 1, rec.maxUnavailable)
	}
}

func TestStatefulSetWalkOfACanaryStepMovesOnlyTheHighestOrdinal(t *testing.T) {
	ns, hash, rec := heldStatefulSet(t)

	// When the walk of a setReplicas: 1 step runs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, walker(ns, nil, t).Walk(ctx, "db", hash, 1))

	// Then db-2 alone runs the new template, held there by partition 2
	set := waitForSet(t, ns, "the canary in place", func(s *appsv1.StatefulSet) bool { return s.Status.UpdatedReplicas == 1 })
	assert.Equal(t, int32(2), *set.Spec.UpdateStrategy.RollingUpdate.Partition)
	time.Sleep(2 * time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []string{"db-2"}, rec.moved)

	// And a walk run again for the same step changes nothing
	require.NoError(t, walker(ns, nil, t).Walk(ctx, "db", hash, 1))
	for o := range 2 {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "db-"+strconv.Itoa(o), metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, hash, p.Labels[appsv1.ControllerRevisionHashLabelKey], "db-%d moved", o)
	}
}
