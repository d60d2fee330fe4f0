package deployerpod

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

func terminated(pod *corev1.Pod, code int32, message string) *corev1.Pod {
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "deployer",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message}}}}
	return pod
}

func TestSyncRevisionMapsPodPhase(t *testing.T) {
	tests := []struct {
		name       string
		phase      v1alpha1.RevisionPhase
		pod        *corev1.Pod
		available  int32 // replicas and available replicas of the revision
		wantPhase  string
		wantReason string
	}{
		{name: "pending", phase: "Pending", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, wantPhase: "Pending"},
		{name: "running", phase: "Pending", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, wantPhase: "Running"},
		{name: "succeeded with the desired replicas available", phase: "Running", available: 1,
			pod: terminated(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, 0, ""), wantPhase: "Complete", wantReason: "Completed"},
		{name: "failed with JSON", phase: "Running", pod: terminated(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, 3, `{"reason":"HookFailed","message":"boom"}`), wantPhase: "Failed", wantReason: "HookFailed: boom"},
		{name: "never backwards", phase: "Running", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, wantPhase: "Running"},
		{name: "terminal stays", phase: "Failed", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, wantPhase: "Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
			rs := controllertest.Revision(t, dc, 1, tt.phase, tt.available)
			rs.Status.AvailableReplicas = tt.available
			pod := deployerPod(t, rs, "")
			pod.Status = tt.pod.Status
			f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)
			require.NoError(t, f.syncRevision("web-1"))
			got := f.GetRS("web-1")
			assert.Equal(t, tt.wantPhase, got.Annotations[v1alpha1.PhaseAnnotation])
			assert.Equal(t, tt.wantReason, got.Annotations[v1alpha1.StatusReasonAnnotation])
		})
	}
}

func TestSyncRevisionCreatesOneDeployerPod(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)

	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, []string{"get replicasets", "create pods", "update replicasets"}, f.Actions())
	assert.Equal(t, "Pending", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])

	// The cache still holds the version that our own Pending write replaced: the sync
	// waits for that write's event without a request, and never creates a second pod.
	require.NoError(t, f.syncRevision("web-1"))
	assert.Empty(t, f.Actions())

	// Once the cache has the write, the revision moves on from the pod as usual.
	f.Cache(f.GetRS("web-1"))
	pod, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), v1alpha1.DeployerPodName("web-1"), metav1.GetOptions{})
	require.NoError(t, err)
	f.Cache(pod)
	require.NoError(t, f.syncRevision("web-1"))
	assert.NotContains(t, f.Actions(), "create pods")
}

func TestSyncRevisionNeverRecreatesAPodForATerminalRevision(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	cached := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	live := cached.DeepCopy()
	live.Annotations[v1alpha1.PhaseAnnotation] = "Failed"
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, live)
	f.Cache(cached) // the cache lags: it still sees New

	require.NoError(t, f.syncRevision("web-1"))
	assert.NotContains(t, f.Actions(), "create pods")
}

func TestSyncRevisionDeployerPodGone(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	for i := 0; i < podGoneTolerance; i++ {
		err := f.syncRevision("web-1")
		require.Error(t, err)
		require.True(t, plumbing.IsRequeue(err), "tolerated %d: %v", i, err)
		assert.Equal(t, "Running", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
	}
	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.Equal(t, "DeployerPodGone: deployer pod no longer exists", got.Annotations[v1alpha1.StatusReasonAnnotation])
	assert.NotContains(t, f.Actions(), "create pods")
}

func TestSyncRevisionCreateFailureFailsAfterTimeout(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	rs.CreationTimestamp = metav1.NewTime(metav1.Now().Add(-700e9)) // 700 s ago, past the 600 s timeout
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	f.Kube.PrependReactor("create", "pods", controllertest.Forbidden)

	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	assert.True(t, strings.HasPrefix(got.Annotations[v1alpha1.StatusReasonAnnotation], v1alpha1.ReasonDeployerPodNotAdmit+": "))

	// Before the timeout: a Warning and a retry, the revision stays New.
	rs2 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	rs2.CreationTimestamp = metav1.Now()
	f = newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs2)
	f.Kube.PrependReactor("create", "pods", controllertest.Forbidden)
	require.Error(t, f.syncRevision("web-1"))
	assert.Equal(t, "New", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
	assert.Contains(t, <-f.Events.Events, v1alpha1.EventDeployerPodCreateFailed)

	// A revision created long ago but retried just now counts from its retry.
	rs3 := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	rs3.CreationTimestamp = metav1.NewTime(metav1.Now().Add(-700e9))
	rs3.Annotations[v1alpha1.RetriedAtAnnotation] = metav1.Now().UTC().Format(time.RFC3339)
	f = newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs3)
	f.Kube.PrependReactor("create", "pods", controllertest.Forbidden)
	require.Error(t, f.syncRevision("web-1"))
	assert.Equal(t, "New", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation], "a retried revision gets the whole timeout again")
}

// A deployer that exits 0 is not enough (DESIGN.md §4 invariant 6): without its desired
// replicas available the revision waits a grace for the ReplicaSet's status, then fails.
func TestSyncRevisionNeverCompleteWithoutTheReplicas(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 0)
	pod := terminated(deployerPod(t, rs, corev1.PodSucceeded), 0, "")
	exited := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(exited)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)

	f.pods.now = func() time.Time { return exited.Add(proofGrace / 2) }
	err := f.syncRevision("web-1")
	require.True(t, plumbing.IsRequeue(err), "within the grace the controller waits: %v", err)
	assert.Equal(t, "Running", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])

	f.pods.now = func() time.Time { return exited.Add(proofGrace + time.Second) }
	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.StatusReason(got)
	assert.Equal(t, v1alpha1.ReasonEndedWithoutRollout, reason)
	assert.Contains(t, msg, "0 of 2 available")
}

// A pod that is not Stagehand's but holds the deployer pod's name is never adopted nor
// deleted: the revision fails with a reason that names it.
func TestSyncRevisionLeavesAForeignPodAlone(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-deploy", Namespace: "ns", UID: "someone-elses",
		Labels: map[string]string{v1alpha1.DeployerPodForLabel: "web-1"}}}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, foreign)

	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.StatusReason(got)
	assert.Equal(t, v1alpha1.ReasonDeployerPodNameTaken, reason)
	assert.Contains(t, msg, "pod ns/web-1-deploy")
	assert.NotContains(t, f.Actions(), "delete pods")
	_, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), "web-1-deploy", metav1.GetOptions{})
	assert.NoError(t, err, "the foreign pod is still there")
}

// A deployer pod that the apiserver refuses as Invalid fails the revision at once with the
// apiserver's message, instead of retrying until the timeout.
func TestSyncRevisionInvalidDeployerPodFailsAtOnce(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseNew, 0)
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs)
	f.Kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "web-1-deploy",
			field.ErrorList{field.Invalid(field.NewPath("spec", "nodeSelector"), "bad key!", "name part must consist of alphanumeric characters")})
	})
	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.StatusReason(got)
	assert.Equal(t, v1alpha1.ReasonDeployerPodNotAdmit, reason)
	assert.Contains(t, msg, "spec.nodeSelector")
}

// A deployer pod that cannot start (a missing ConfigMap key) fails its revision once the
// grace has passed, with the kubelet's message; the pod is kept.
func TestSyncRevisionFailsAStuckDeployerPod(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 1), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhasePending, 0)
	pod := deployerPod(t, rs, corev1.PodPending)
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod.Status.StartTime = &metav1.Time{Time: started}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "deployer", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: "couldn't find key token in ConfigMap ns/settings"}}}}
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, pod)

	f.pods.now = func() time.Time { return started.Add(time.Second) }
	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, "Pending", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation], "within the grace it waits")

	f.pods.now = func() time.Time { return started.Add(podstatus.DefaultStuckGrace.Config + time.Second) }
	require.NoError(t, f.syncRevision("web-1"))
	got := f.GetRS("web-1")
	assert.Equal(t, "Failed", got.Annotations[v1alpha1.PhaseAnnotation])
	reason, msg := revision.StatusReason(got)
	assert.Equal(t, "CreateContainerConfigError", reason)
	assert.Contains(t, msg, "couldn't find key token in ConfigMap ns/settings")
	assert.NotContains(t, f.Actions(), "delete pods", "the pod is kept for inspection")
}

// On a busy cluster the ReplicaSet controller's status can trail the pods by longer than
// the grace: the proof then counts the revision's own pods, by the deployer's rule.
func TestSyncRevisionProvesCompleteFromThePodsWhenTheStatusLags(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	rs := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 2)
	rs.UID = "rs-uid"
	rs.Status = appsv1.ReplicaSetStatus{} // the ReplicaSet controller has not caught up
	deployer := terminated(deployerPod(t, rs, corev1.PodSucceeded), 0, "")
	exited := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	deployer.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(exited)
	appPod := func(name string, ready corev1.ConditionStatus, owner types.UID) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: rs.Spec.Selector.MatchLabels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: owner, Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(exited.Add(-time.Minute))}}},
		}
	}

	// One ready pod of its own, one unready, one ready but another's: not proven yet.
	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, deployer,
		appPod("a", corev1.ConditionTrue, rs.UID), appPod("b", corev1.ConditionFalse, rs.UID), appPod("c", corev1.ConditionTrue, "other"))
	f.pods.now = func() time.Time { return exited.Add(time.Second) }
	err := f.syncRevision("web-1")
	require.True(t, plumbing.IsRequeue(err), "1 of 2 available: wait: %v", err)
	assert.Equal(t, "Running", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])

	// Both of its own pods available: Complete, whatever the ReplicaSet's status says.
	f = newFixture(t, []*v1alpha1.DeploymentConfig{dc}, rs, deployer,
		appPod("a", corev1.ConditionTrue, rs.UID), appPod("b", corev1.ConditionTrue, rs.UID))
	f.pods.now = func() time.Time { return exited.Add(time.Second) }
	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, "Complete", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
}

// The proof of invariant 6 reads the ReplicaSet from the apiserver only when the cache
// does not already show the desired replicas available: one request fewer per rollout in
// the common case, and the same proof when the cache lags.
func TestSyncRevisionProvesCompleteFromTheCacheFirst(t *testing.T) {
	dc := controllertest.WithLatest(controllertest.DC("web", "app:1", 2), 1)
	proven := controllertest.Revision(t, dc, 1, v1alpha1.RevisionPhaseRunning, 2)
	proven.Status = appsv1.ReplicaSetStatus{Replicas: 2, AvailableReplicas: 2}
	deployer := terminated(deployerPod(t, proven, corev1.PodSucceeded), 0, "")

	f := newFixture(t, []*v1alpha1.DeploymentConfig{dc}, proven, deployer)
	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, []string{"update replicasets"}, f.Actions(), "the cache proved it: no read")
	assert.Equal(t, "Complete", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])

	// The cache lags behind the apiserver: the live read proves it.
	lagging := proven.DeepCopy()
	lagging.Status = appsv1.ReplicaSetStatus{}
	f = newFixture(t, []*v1alpha1.DeploymentConfig{dc}, proven, deployer)
	require.NoError(t, f.Informers.ReplicaSets.Informer().GetIndexer().Update(lagging))
	require.NoError(t, f.syncRevision("web-1"))
	assert.Equal(t, []string{"get replicasets", "update replicasets"}, f.Actions())
	assert.Equal(t, "Complete", f.GetRS("web-1").Annotations[v1alpha1.PhaseAnnotation])
}
