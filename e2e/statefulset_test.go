//go:build e2e

package e2e

// StatefulSet DeploymentConfigs (docs/statefulsets.md) on the local cluster: a rollout
// walks the pods from the highest ordinal, one at a time, with the pre hook first, and
// every claim kept; a failed revision rolls back and replaces its stuck pod, which a plain
// StatefulSet leaves stuck (statefulset_stuck_test.go).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// statefulDC is a 3-replica DC of the test app on StatefulSet db with a claim "data" per
// pod, bound to the hostPath volumes labelled volume=<ns>, and a pre hook.
func statefulDC(ns string) *stagehandv1.DeploymentConfig {
	dc := framework.NewDeploymentConfig("db", 3, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	dc.Spec.StatefulSet = &stagehandv1.StatefulSetWorkload{
		ServiceName: "db",
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(""),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"volume": ns}},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
			},
		}},
	}
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		TimeoutSeconds: ptr.To[int64](60),
		Pre:            framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo pre hook of $VERSION"),
		Post: &stagehandv1.LifecycleHook{FailurePolicy: stagehandv1.LifecycleHookFailurePolicyAbort, Exec: &stagehandv1.ExecHook{
			ContainerName: "app", Command: []string{"/bin/sh", "-c", `echo "post in version $VERSION"`}, Pods: stagehandv1.ExecHookPodsNew,
			TimeoutSeconds: ptr.To[int64](30)}},
	}
	return dc
}

// waitForStatefulRevision waits until revision n of DC db, a ControllerRevision, is in phase.
func waitForStatefulRevision(t *testing.T, ns string, n int64, phase stagehandv1.RevisionPhase) *appsv1.ReplicaSet {
	t.Helper()
	var view *appsv1.ReplicaSet
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cr, err := env.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, stagehandv1.RevisionName("db", n), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		if view, err = revision.FromControllerRevision(cr); err != nil {
			return false, err
		}
		return revision.Phase(view) == phase, nil
	})
	require.NoError(t, err, "revision %d of db to be %s\n%s", n, phase, env.Describe(ns, "db"))
	return view
}

// ordinalRecord follows the pods of StatefulSet db: the most unavailable at once and the
// order in which they first ran a template hash.
type ordinalRecord struct {
	mu             sync.Mutex
	maxUnavailable int
	firstOn        map[string][]string // hash -> pod names, in order
}

func recordOrdinals(t *testing.T, ns string) *ordinalRecord {
	r := &ordinalRecord{firstOn: map[string][]string{}}
	var store interface{ List() []any }
	observe := func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if store == nil {
			return // the informer's first list: observed once it has synced
		}
		up := 0
		for _, obj := range store.List() {
			p := obj.(*corev1.Pod)
			if p.DeletionTimestamp == nil && framework.PodReady(p) {
				up++
			}
			hash := p.Labels[appsv1.ControllerRevisionHashLabelKey]
			if !contains(r.firstOn[hash], p.Name) {
				r.firstOn[hash] = append(r.firstOn[hash], p.Name)
			}
		}
		r.maxUnavailable = max(r.maxUnavailable, 3-up)
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { observe() },
		UpdateFunc: func(_, _ any) { observe() },
		DeleteFunc: func(any) { observe() },
	}
	informed := env.InformPods(t, ns, "app=db,!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel, handler)
	r.mu.Lock()
	store = informed
	r.mu.Unlock()
	observe()
	return r
}

// updateDB changes DC db, again on a conflict.
func updateDB(t *testing.T, ns string, mutate func(*stagehandv1.DeploymentConfig)) {
	t.Helper()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	require.Eventually(t, func() bool {
		dc, err := dcs.Get(context.Background(), "db", metav1.GetOptions{})
		if err != nil {
			return false
		}
		mutate(dc)
		_, err = dcs.Update(context.Background(), dc, metav1.UpdateOptions{})
		return err == nil
	}, podTimeout, 200*time.Millisecond)
}

// podsOnHash waits until the 3 pods of db are Ready on template hash.
func podsOnHash(t *testing.T, ns, hash string) {
	t.Helper()
	env.WaitForPods(t, ns, "app=db,!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel+",!"+stagehandv1.DeferStepOfLabel,
		2*time.Minute, "3 pods Ready on "+hash, func(ps []*corev1.Pod) bool {
			ready := 0
			for _, p := range ps {
				if p.DeletionTimestamp == nil && framework.PodReady(p) && p.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
					ready++
				}
			}
			return ready == 3 && len(ps) == 3
		})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStatefulSetRolloutWalksFromTheHighestOrdinalAndKeepsTheClaims(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	// Given revision 1 of a StatefulSet DC serves, 3 pods with a claim each
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, statefulDC(ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	claims := claimUIDs(t, ns)
	require.Len(t, claims, 3)
	rec := recordOrdinals(t, ns)
	rec.mu.Lock()
	rec.maxUnavailable = 0
	rec.mu.Unlock()

	// When the template changes
	updateDB(t, ns, func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2) })

	// Then revision 2 completes: its pre hook ran, the pods moved from ordinal 2 down to 0
	// one at a time, and every claim kept its UID
	two := waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseComplete)
	hash := revision.TemplateHash(two)
	require.NotEmpty(t, hash, "revision 2 records its template hash")
	assert.True(t, containsAny(eventsWithReason(t, ns, stagehandv1.EventHookSucceeded), "db-2-hook-pre"), "the pre hook of revision 2 succeeded")
	rec.mu.Lock()
	assert.Equal(t, []string{"db-2", "db-1", "db-0"}, rec.firstOn[hash])
	assert.Equal(t, 1, rec.maxUnavailable, "never more than one pod unavailable (and one was: the walk ran)")
	rec.mu.Unlock()
	assert.Equal(t, claims, claimUIDs(t, ns))
	// And its post exec hook ran once in each of the 3 new pods
	post, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(ctx, "db-2-hook-post", metav1.GetOptions{})
	require.NoError(t, err)
	checkEveryPod(t, post, 3, "post in version 2")
}

func TestStatefulSetFailedRevisionRollsBackAndReplacesItsStuckPod(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	// Given revision 1 of a StatefulSet DC serves, 3 pods with a claim each
	dc := statefulDC(ns)
	dc.Spec.Strategy.RollingParams.TimeoutSeconds = ptr.To[int64](15)
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	one := waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
	claims := claimUIDs(t, ns)
	require.Len(t, claims, 3)

	// When revision 2's pods never become Ready
	updateDB(t, ns, func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		neverReady(dc)
	})

	// Then it fails at its timeout, with db-2 stuck on its template
	two := waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseFailed)
	require.NotEmpty(t, revision.TemplateHash(two))
	// And the rollback replaces the stuck pod: every pod runs revision 1's template again,
	// Ready, with its claim
	require.Eventually(t, func() bool {
		one = waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)
		return revision.TemplateHash(one) != ""
	}, 2*time.Minute, 200*time.Millisecond, "revision 1's hash recorded")
	podsOnHash(t, ns, revision.TemplateHash(one))
	assert.NotEmpty(t, eventsWithReason(t, ns, stagehandv1.EventStuckPodReplaced), "the stuck pod's replacement is an event")
	assert.Equal(t, claims, claimUIDs(t, ns))

	// And the same sequence on a plain StatefulSet stays stuck (kubernetes#67250)
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/plain-%d", ns, i))
	}
	plainStaysStuck(t, ns, "plain")
}

func TestStatefulSetCanaryStepHoldsTheHighestOrdinalUntilPromoted(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	// Given revision 1 of a StatefulSet DC with the steps setReplicas: 1, then pause
	dc := statefulDC(ns)
	dc.Spec.Strategy.RollingParams.Steps = []stagehandv1.RollingStep{
		{SetReplicas: ptr.To(intstr.FromInt32(1))}, {Pause: &stagehandv1.PauseStep{}}}
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForStatefulRevision(t, ns, 1, stagehandv1.RevisionPhaseComplete)

	// When revision 2 starts, it pauses at step 2 with exactly ordinal 2 moved
	updateDB(t, ns, func(dc *stagehandv1.DeploymentConfig) { framework.SetVersion(dc, 2) })
	var two *appsv1.ReplicaSet
	require.Eventually(t, func() bool {
		two = waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseRunning)
		step, ok := stagehandv1.StepOf(two)
		return ok && step.Step == 2 && step.State == stagehandv1.StepPaused
	}, 2*time.Minute, 200*time.Millisecond, "revision 2 paused at step 2")
	hash := revision.TemplateHash(two)
	onNew := func() []string {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db," + appsv1.ControllerRevisionHashLabelKey + "=" + hash})
		require.NoError(t, err)
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names
	}
	assert.Equal(t, []string{"db-2"}, onNew())
	time.Sleep(3 * time.Second)
	assert.Equal(t, []string{"db-2"}, onNew(), "the pause holds the other ordinals")
	tree := pluginOK(t, ns, "get", "dc/db").Stdout
	assert.Contains(t, tree, "StatefulSet", "the get tree shows the StatefulSet")
	assert.Contains(t, tree, "template of revision 2")

	// Then rollout promote completes it, every pod on the new template
	out := pluginOK(t, ns, "rollout", "promote", "dc/db")
	assert.Contains(t, out.Stdout, "promoted")
	status := pluginOK(t, ns, "rollout", "status", "dc/db", "--timeout=2m")
	assert.Contains(t, status.Stdout, "revision db-2 is complete")
	waitForStatefulRevision(t, ns, 2, stagehandv1.RevisionPhaseComplete)
	assert.ElementsMatch(t, []string{"db-0", "db-1", "db-2"}, onNew())
}
