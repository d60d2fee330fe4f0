package webui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

func TestWhySaysWhatTheRolloutWaitsFor(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "web:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
		RollingParams: &v1alpha1.RollingDeploymentStrategyParams{Pre: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry,
			Retry: &v1alpha1.RetryParams{MaxAttempts: 3}}}})
	dc.Status.LatestVersion = 2
	one := testutil.Revision(dc, 1, 2, v1alpha1.RevisionPhaseComplete)
	rev := func(phase v1alpha1.RevisionPhase, annotations map[string]string) *appsv1.ReplicaSet {
		rs := testutil.Revision(dc, 2, 0, phase)
		for k, v := range annotations {
			rs.Annotations[k] = v
		}
		return rs
	}
	labels := map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: "2"}
	hook := func(attempt int) *corev1.Pod {
		l := map[string]string{v1alpha1.HookStageLabel: "pre"}
		for k, v := range labels {
			l[k] = v
		}
		p := testutil.ReadyPod("ns", v1alpha1.HookPodName("web-2", "pre", attempt), l, time.Now())
		p.Status.Phase = corev1.PodRunning
		return p
	}
	deployer := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2-deploy", Labels: map[string]string{v1alpha1.DeployerPodForLabel: "web-2"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}}}
	paused := `{"step":3,"total":5,"name":"step-3","action":"pause","state":"Paused"}`
	for _, tc := range []struct {
		name string
		rs   *appsv1.ReplicaSet
		pods []*corev1.Pod
		want string
	}{
		{"quota", rev(v1alpha1.RevisionPhaseNew, map[string]string{v1alpha1.WaitingAnnotation: "ExceededQuota: pods \"web-2-deploy\" is forbidden"}), nil,
			`waiting for quota: pods "web-2-deploy" is forbidden`},
		{"no node fits", rev(v1alpha1.RevisionPhasePending, nil), []*corev1.Pod{deployer}, "deployer pod Pending: no node fits (0/1 nodes are available)"},
		{"paused at a step", rev(v1alpha1.RevisionPhaseRunning, map[string]string{v1alpha1.StepAnnotation: paused}), nil,
			"paused at step 3 of 5: run `kubectl stagehand rollout promote dc/web` (or resume)"},
		{"a hook retrying", rev(v1alpha1.RevisionPhaseRunning, nil), []*corev1.Pod{hook(2)}, "pre hook retrying (attempt 2 of 3)"},
		{"failed and rolled back", rev(v1alpha1.RevisionPhaseFailed, map[string]string{v1alpha1.StatusReasonAnnotation: "TimedOut: no progress"}), nil,
			"revision web-2 failed: TimedOut: no progress; rolled back to web-1"},
		{"complete", rev(v1alpha1.RevisionPhaseComplete, nil), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, why(&config{dc: dc, revs: []*appsv1.ReplicaSet{one, tc.rs}, pods: tc.pods}))
		})
	}
	frozen := dc.DeepCopy()
	frozen.Status.Frozen = "web-2"
	assert.Contains(t, why(&config{dc: frozen}), "frozen at web-2 (onFailure: Freeze)")
}

func TestHookStagesAreTimedByTheDeployersEvents(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "web:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	rs := testutil.Revision(dc, 2, 2, v1alpha1.RevisionPhaseComplete)
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	event := func(reason, message string, at time.Duration) *corev1.Event {
		return &corev1.Event{Reason: reason, Message: message, LastTimestamp: metav1.NewTime(t0.Add(at))}
	}
	events := []*corev1.Event{
		event(v1alpha1.EventHookStarted, "pre hook web-2-hook-pre started", 0),
		event(v1alpha1.EventHookFailed, "pre hook web-2-hook-pre failed (exit 1): retrying", 2*time.Second),
		event(v1alpha1.EventHookStarted, "pre hook web-2-hook-pre-2 (attempt 2 of 3) started", 3*time.Second),
		event(v1alpha1.EventHookSucceeded, "pre hook web-2-hook-pre-2 (attempt 2 of 3) succeeded", 7*time.Second),
		event(v1alpha1.EventHookStarted, "post hook web-1-hook-post started", 0), // another revision's
		event(v1alpha1.EventHookStarted, "post hook web-2-hook-post started", 8*time.Second),
	}
	got := hookStages(rs, events, map[string]bool{"web-2-hook-post": true})
	assert.Equal(t, []Stage{
		{Name: "pre hook", Pod: "web-2-hook-pre", State: "Failed", Start: t0, End: t0.Add(2 * time.Second), Duration: "2s"},
		{Name: "pre hook (attempt 2)", Pod: "web-2-hook-pre-2", State: "Succeeded", Start: t0.Add(3 * time.Second), End: t0.Add(7 * time.Second), Duration: "4s"},
	}, got, "the post hook's pod is still there and times itself")
}

// A StatefulSet DC's pods carry no revision label: each one's revision is the one whose
// template hash it runs.
func TestDetailPutsStatefulSetPodsUnderTheRevisionOfTheirHash(t *testing.T) {
	dc := testutil.DeploymentConfig("db", "db:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Spec.StatefulSet = &v1alpha1.StatefulSetWorkload{ServiceName: "db"}
	one, two := testutil.Revision(dc, 1, 0, v1alpha1.RevisionPhaseComplete), testutil.Revision(dc, 2, 0, v1alpha1.RevisionPhaseRunning)
	one.Annotations[v1alpha1.TemplateHashAnnotation], two.Annotations[v1alpha1.TemplateHashAnnotation] = "db-aaa", "db-bbb"
	pod := func(name, hash string) *corev1.Pod {
		return testutil.ReadyPod("ns", name, map[string]string{v1alpha1.ConfigLabel: "db", appsv1.ControllerRevisionHashLabelKey: hash}, time.Now())
	}
	d := detailOf(&config{dc: dc, revs: []*appsv1.ReplicaSet{one, two}, pods: []*corev1.Pod{pod("db-0", "db-aaa"), pod("db-1", "db-bbb")}})
	got := map[string]string{}
	for _, p := range d.Pods {
		got[p.Name] = p.Revision
	}
	assert.Equal(t, map[string]string{"db-0": "1", "db-1": "2"}, got)
	assert.Equal(t, int32(2), d.Ready, "ready counts the pods")
}
