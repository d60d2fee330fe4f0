package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	listers "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

func indexer(t *testing.T, objs ...any) cache.Indexer {
	i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, i.Add(o))
	}
	return i
}

func TestFailuresAreReadFromHookPodsExecutionHooksAndDeferRuns(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "web:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	rs1, rs2 := testutil.Revision(dc, 1, 2, v1alpha1.RevisionPhaseComplete), testutil.Revision(dc, 2, 2, v1alpha1.RevisionPhaseRunning)
	owned := func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
	}
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	hookPod := func(name string, rs *appsv1.ReplicaSet, phase corev1.PodPhase, exit int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: dc.Namespace, OwnerReferences: owned(rs),
			Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: rs.Labels[v1alpha1.RevisionLabel], v1alpha1.HookStageLabel: "pre"}},
			Status: corev1.PodStatus{Phase: phase}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Reason: "Error", Message: "migrating\nboom\n", FinishedAt: metav1.NewTime(at)}}}}
		return p
	}
	stranger := hookPod("web-2-hook-pre-1x", rs2, corev1.PodFailed, 1)
	stranger.OwnerReferences = nil // only pods the revision owns count
	run := &v1alpha1.DeferRun{Policy: "drain", When: v1alpha1.DeferAfterTermination, Steps: 2, Current: 1, Failed: []string{"hand-over"}}
	appPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2-abcde", Namespace: dc.Namespace,
		Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2"}}}
	v1alpha1.SetDeferRun(appPod, run)
	quiet := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-quiet", Namespace: dc.Namespace,
		Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "1"}}}
	userHook := &v1alpha1.ExecutionHook{ObjectMeta: metav1.ObjectMeta{Name: "quiesce", Namespace: dc.Namespace},
		Status: v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookFailed, Summary: "failed in 1 of 2 containers",
			HookStatuses: []v1alpha1.ContainerExecutionHookStatus{
				{PodName: "web-1-quiet", ContainerName: "app", Succeed: ptr.To(true)},
				{PodName: "web-2-abcde", ContainerName: "app", Succeed: ptr.To(false), Output: "fsfreeze: busy\n"}}}}
	complete := userHook.DeepCopy()
	complete.Name, complete.Status.Phase = "fine", v1alpha1.ExecutionHookComplete

	// A failed step of revision 1's pod, whose pod and run are gone
	policy := &v1alpha1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: "drain"},
		Spec: v1alpha1.DeferPolicySpec{Steps: []v1alpha1.DeferStep{{Name: "hand-over", Image: "busybox"}}}}
	gone := quiet.DeepCopy()
	gone.Name = "web-1-gone"
	step, err := deferstep.Build(gone, &v1alpha1.DeferRun{Steps: 1}, policy, "web-1-gone-step-1", corev1.ResourceRequirements{})
	require.NoError(t, err)
	step.Status.Phase = corev1.PodFailed

	s := failureSources{
		hookPods: corelisters.NewPodLister(indexer(t, hookPod("web-1-hook-pre-1", rs1, corev1.PodSucceeded, 0),
			hookPod("web-2-hook-pre-1", rs2, corev1.PodFailed, 3), stranger)),
		pods:      corelisters.NewPodLister(indexer(t, appPod, quiet, step)),
		execHooks: listers.NewExecutionHookLister(indexer(t, userHook, complete)),
	}
	got := s.of(dc, []*appsv1.ReplicaSet{rs1, rs2})
	require.Len(t, got[rs1.Name], 1, "revision 1's hook succeeded, and the failed ExecutionHook failed in a pod of revision 2 only")
	assert.Equal(t, "step 1 of DeferPolicy drain for pod web-1-gone failed (step pod web-1-gone-step-1)", got[rs1.Name][0].Message)
	require.Len(t, got[rs2.Name], 3)
	byEvent := map[v1alpha1.NotifyEvent]Failure{}
	for _, f := range got[rs2.Name] {
		byEvent[f.Event] = f
	}
	hook := byEvent[v1alpha1.NotifyHookFailed]
	assert.Equal(t, "pre hook pod web-2-hook-pre-1 failed with exit code 3", hook.Message)
	assert.Equal(t, "migrating\nboom", hook.LogTail)
	assert.Equal(t, "pre", hook.Step)
	assert.Contains(t, byEvent[v1alpha1.NotifyDeferStepFailed].Message, "DeferPolicy drain for pod web-2-abcde: hand-over failed")
	eh := byEvent[v1alpha1.NotifyExecutionHookFailed]
	assert.Equal(t, "ExecutionHook quiesce", eh.Step)
	assert.Equal(t, "fsfreeze: busy", eh.LogTail)

	// Oldest first: the defer run and the ExecutionHook carry no time here, the hook pod does.
	occ := Happened(dc, []*appsv1.ReplicaSet{rs1, rs2}, got)
	assert.Equal(t, []string{"web-1 Started", "web-1 Complete", "web-1 DeferStepFailed", "web-2 Started", "web-2 DeferStepFailed", "web-2 ExecutionHookFailed", "web-2 HookFailed"}, events(occ))
}
