package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/internal/tree"
)

var treeNow = time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)

func treeAgo(d time.Duration) metav1.Time { return metav1.NewTime(treeNow.Add(-d)) }

// treeDC is web in namespace shop, created 10 minutes ago, with revision latest in phase.
func treeDC(strategy v1alpha1.DeploymentStrategy, latest int64, phase v1alpha1.RevisionPhase, ready int32) *v1alpha1.DeploymentConfig {
	dc := testutil.DeploymentConfig("web", "registry.example.com/web:2", 2, strategy)
	dc.Namespace, dc.UID, dc.CreationTimestamp = "shop", "web-uid", treeAgo(10*time.Minute)
	dc.Status = v1alpha1.DeploymentConfigStatus{LatestVersion: latest, Phase: phase, Replicas: 2, ReadyReplicas: ready,
		AvailableReplicas: ready, UpdatedReplicas: ready}
	return dc
}

// treeRevision is revision n of dc, created age ago, with replicas of which ready are ready.
func treeRevision(dc *v1alpha1.DeploymentConfig, n int64, phase v1alpha1.RevisionPhase, replicas, ready int32, age time.Duration) *appsv1.ReplicaSet {
	rs := testutil.Revision(dc, n, replicas, phase)
	rs.CreationTimestamp = treeAgo(age)
	rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = replicas, ready, ready
	rs.Annotations[v1alpha1.CauseAnnotation] = string(v1alpha1.DeploymentCauseConfigChange)
	if n == 1 {
		rs.Spec.Template.Spec.Containers[0].Image = "registry.example.com/web:1"
	}
	return rs
}

// treePod is a pod of revision rs with extra labels, in phase, created age ago.
func treePod(rs *appsv1.ReplicaSet, name string, extra map[string]string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	labels := map[string]string{"app": "web", v1alpha1.ConfigLabel: "web", v1alpha1.RevisionLabel: rs.Labels[v1alpha1.RevisionLabel]}
	for k, v := range extra {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name), Labels: labels, CreationTimestamp: treeAgo(age)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// treeAppPod is a Running application pod, ready or not, with restarts.
func treeAppPod(rs *appsv1.ReplicaSet, name string, ready bool, restarts int32, age time.Duration) *corev1.Pod {
	p := treePod(rs, name, nil, corev1.PodRunning, age)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return p
}

func treeDeployerPod(rs *appsv1.ReplicaSet, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	rs.Annotations[v1alpha1.DeployerPodAnnotation] = v1alpha1.DeployerPodName(rs.Name)
	return treePod(rs, v1alpha1.DeployerPodName(rs.Name), map[string]string{v1alpha1.DeployerPodForLabel: rs.Name}, phase, age)
}

func treeHookPod(rs *appsv1.ReplicaSet, stage string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	return treePod(rs, v1alpha1.HookPodName(rs.Name, stage, 1), map[string]string{v1alpha1.HookStageLabel: stage}, phase, age)
}

func treeTerminated(p *corev1.Pod, code int32, reason, message string) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}}}}
	return p
}

func treeCondition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

// treeOutput runs `get` once on the objects, without a terminal.
func treeOutput(t *testing.T, objs ...runtime.Object) string {
	t.Helper()
	var out bytes.Buffer
	g := newTreeGetter(objs, &out)
	require.NoError(t, g.once(context.Background()))
	return out.String()
}

func newTreeGetter(objs []runtime.Object, out *bytes.Buffer) *getter {
	var kube, sh []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *v1alpha1.DeploymentConfig, *v1alpha1.ExecutionHook:
			sh = append(sh, o)
		default:
			kube = append(kube, o)
		}
	}
	return &getter{kube: kubefake.NewClientset(kube...), stagehand: stagehandfake.NewSimpleClientset(sh...),
		ns: "shop", name: "web", out: out, now: func() time.Time { return treeNow }}
}

func treeRolling() v1alpha1.DeploymentStrategy {
	return v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling}
}

func TestGetCompleteWithTwoRevisions(t *testing.T) {
	strategy := treeRolling()
	strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Post: &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort, Exec: &v1alpha1.ExecHook{ContainerName: "app", Command: []string{"warm"}}}}
	dc := treeDC(strategy, 2, v1alpha1.RevisionPhaseComplete, 2)
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{
		{Type: v1alpha1.DeploymentTriggerOnConfigChange},
		{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
			Automatic: true, ContainerNames: []string{"app"}, From: v1alpha1.ImageReference{Image: "registry.example.com/web:stable"},
			LastTriggeredImage: "registry.example.com/web@sha256:2222"}},
	}
	dc.Status.Conditions = []metav1.Condition{
		treeCondition(v1alpha1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "2 of 2 pods are available"),
		treeCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRolloutComplete, "revision web-2 is complete"),
	}
	rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 0, 0, 10*time.Minute)
	rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseComplete, 2, 2, 3*time.Minute)
	rs2.Annotations[v1alpha1.CauseAnnotation] = string(v1alpha1.DeploymentCauseImageChange)
	rs2.Annotations[v1alpha1.ImageTriggerAnnotation] = "registry.example.com/web:stable -> registry.example.com/web@sha256:2222"
	eh := &v1alpha1.ExecutionHook{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2-hook-post", Namespace: "shop", CreationTimestamp: treeAgo(2 * time.Minute),
			Labels: map[string]string{v1alpha1.ConfigLabel: "web", v1alpha1.HookStageLabel: "post", v1alpha1.ExecHookOfLabel: "web-2"}},
		Status: v1alpha1.ExecutionHookStatus{Phase: v1alpha1.ExecutionHookComplete, Summary: "2/2"},
	}
	got := treeOutput(t, dc, rs1, rs2, eh,
		treeTerminated(treeDeployerPod(rs2, corev1.PodSucceeded, 3*time.Minute), 0, "Completed", ""),
		treeAppPod(rs2, "web-2-abcde", true, 0, 3*time.Minute),
		treeAppPod(rs2, "web-2-fghij", true, 1, 2*time.Minute))

	assert.Equal(t, `Name:        web
Namespace:   shop
Status:      ✔ Complete, revision 2
Strategy:    Rolling, hooks: post (exec)
Replicas:    2/2 ready, 2 updated, 2 available
Triggers:    ConfigChange
             ImageChange of app from registry.example.com/web:stable, automatic, last triggered registry.example.com/web@sha256:2222
Conditions:
  TYPE           STATUS  REASON                    MESSAGE
  ✔ Available    True    MinimumReplicasAvailable  2 of 2 pods are available
  ✔ Progressing  True    RolloutComplete           revision web-2 is complete

NAME                     KIND                STATUS       AGE  INFO
web                      DeploymentConfig    ✔ Complete   10m  ready 2/2
├── web-2                Revision 2          ✔ Complete   3m   ImageChange registry.example.com/web:stable, registry.example.com/web:2, ready 2/2, active
│   ├── web-2-deploy     Deployer            ✔ Succeeded  3m
│   ├── web-2-hook-post  ExecutionHook post  ✔ Complete   2m   2/2 succeeded
│   ├── web-2-abcde      Pod                 ✔ Running    3m   ready 1/1
│   └── web-2-fghij      Pod                 ✔ Running    2m   ready 1/1, restarts 1
└── web-1                Revision 1          ○ Complete   10m  ConfigChange, registry.example.com/web:1, ready 0/0
`, got)
}

func TestGetFailedRolloutShowsTheHookFailure(t *testing.T) {
	strategy := v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
		RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{Pre: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort,
			ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"migrate"}}}}}
	dc := treeDC(strategy, 2, v1alpha1.RevisionPhaseFailed, 2)
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}}
	reason := "HookFailed: hook pod web-2-hook-pre failed with exit code 1 (failurePolicy Abort); its log ends with:\nERROR: relation \"orders\" is locked\n"
	dc.Status.Conditions = []metav1.Condition{
		treeCondition(v1alpha1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "2 of 2 pods are available"),
		treeCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonRolloutFailed, "revision web-2 failed: "+reason),
	}
	rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 2, 2, 10*time.Minute)
	rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseFailed, 0, 0, time.Minute)
	rs2.Annotations[v1alpha1.StatusReasonAnnotation] = reason
	tm := v1alpha1.TerminationMessage{Reason: v1alpha1.ReasonHookFailed, Message: "the pre hook failed"}.Encode()
	got := treeOutput(t, dc, rs1, rs2,
		treeTerminated(treeDeployerPod(rs2, corev1.PodFailed, time.Minute), 3, "Error", tm),
		treeTerminated(treeHookPod(rs2, "pre", corev1.PodFailed, 50*time.Second), 1, "Error",
			"running migrations\nERROR: relation \"orders\" is locked"),
		treeAppPod(rs1, "web-1-abcde", true, 0, 10*time.Minute),
		treeAppPod(rs1, "web-1-fghij", true, 0, 10*time.Minute))

	assert.Equal(t, `Name:        web
Namespace:   shop
Status:      ✖ Failed, revision 2
Strategy:    Recreate, hooks: pre
Replicas:    2/2 ready, 0 updated, 2 available
Triggers:    ConfigChange
Conditions:
  TYPE           STATUS  REASON                    MESSAGE
  ✔ Available    True    MinimumReplicasAvailable  2 of 2 pods are available
  ✖ Progressing  False   RolloutFailed             revision web-2 failed: HookFailed: hook pod web-2-hook-pre failed with exit code 1 (failurePolicy Abort); its log ends with: ERROR: relation "orders" is locked

NAME                    KIND              STATUS      AGE  INFO
web                     DeploymentConfig  ✖ Failed    10m  ready 2/2
├── web-2               Revision 2        ✖ Failed    60s  ConfigChange, registry.example.com/web:2, ready 0/0, HookFailed: hook pod web-2-hook-pre failed with exit code 1 (failurePolicy Abort); its log ends with: ERROR: relation "orders" is locked
│   ├── web-2-deploy    Deployer          ✖ Failed    60s  exit code 3 (Error)
│   └── web-2-hook-pre  Hook pre          ✖ Failed    50s  exit code 1 (Error): ERROR: relation "orders" is locked
└── web-1               Revision 1        ✔ Complete  10m  ConfigChange, registry.example.com/web:1, ready 2/2, active
    ├── web-1-abcde     Pod               ✔ Running   10m  ready 1/1
    └── web-1-fghij     Pod               ✔ Running   10m  ready 1/1
`, got)
}

func TestGetRolloutInProgressWithDeployerAndPreHook(t *testing.T) {
	strategy := treeRolling()
	strategy.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{Pre: &v1alpha1.LifecycleHook{FailurePolicy: v1alpha1.LifecycleHookFailurePolicyRetry,
		ExecNewPod: &v1alpha1.ExecNewPodHook{ContainerName: "app", Command: []string{"migrate"}}}}
	dc := treeDC(strategy, 2, v1alpha1.RevisionPhaseRunning, 1)
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}}
	dc.Status.Conditions = []metav1.Condition{
		treeCondition(v1alpha1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "1 of 2 pods are available"),
		treeCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonNewReplicaSetCreated, "revision web-2 is rolling out"),
	}
	rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 1, 1, 10*time.Minute)
	rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseRunning, 1, 0, 20*time.Second)
	pending := treePod(rs2, "web-2-klmno", nil, corev1.PodPending, 2*time.Second)
	pending.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	leaving := treeAppPod(rs1, "web-1-fghij", false, 0, 10*time.Minute)
	leaving.DeletionTimestamp = &metav1.Time{Time: treeNow.Add(-5 * time.Second)}
	leaving.Finalizers = []string{v1alpha1.DeferFinalizer}
	run := &v1alpha1.DeferRun{Policy: "web-drain", When: v1alpha1.DeferAfterTermination, Steps: 2, Current: 1, Attempt: 1,
		Started: &metav1.Time{Time: treeNow.Add(-4 * time.Second)}, Deadline: &metav1.Time{Time: treeNow.Add(116 * time.Second)}}
	leaving.Annotations = map[string]string{v1alpha1.DeferRunAnnotation: run.Encode(), v1alpha1.DeferProgressAnnotation: run.Progress()}
	got := treeOutput(t, dc, rs1, rs2,
		treeDeployerPod(rs2, corev1.PodRunning, 20*time.Second),
		treeHookPod(rs2, "pre", corev1.PodRunning, 15*time.Second),
		pending,
		treeAppPod(rs1, "web-1-abcde", true, 0, 10*time.Minute),
		leaving)

	assert.Equal(t, `Name:        web
Namespace:   shop
Status:      ◌ Running, revision 2
Strategy:    Rolling, hooks: pre
Replicas:    1/2 ready, 1 updated, 1 available
Triggers:    ConfigChange
Conditions:
  TYPE           STATUS  REASON                    MESSAGE
  ✔ Available    True    MinimumReplicasAvailable  1 of 2 pods are available
  ◌ Progressing  True    NewReplicaSetCreated      revision web-2 is rolling out

NAME                    KIND              STATUS               AGE  INFO
web                     DeploymentConfig  ◌ Running            10m  ready 1/2
├── web-2               Revision 2        ◌ Running            20s  ConfigChange, registry.example.com/web:2, ready 0/1
│   ├── web-2-deploy    Deployer          ◌ Running            20s
│   ├── web-2-hook-pre  Hook pre          ◌ Running            15s
│   └── web-2-klmno     Pod               ◌ ContainerCreating  2s   ready 0/1
└── web-1               Revision 1        ✔ Complete           10m  ConfigChange, registry.example.com/web:1, ready 1/1, active
    ├── web-1-abcde     Pod               ✔ Running            10m  ready 1/1
    └── web-1-fghij     Pod               ◌ Terminating        10m  ready 0/1, defer steps 1/2: Running step 2 attempt 1
`, got)
	assert.NotContains(t, got, "\x1b", "no escape codes without a terminal")
}

func TestGetWithoutRevisionsAndWithADeletedDeployer(t *testing.T) {
	dc := treeDC(treeRolling(), 0, "", 0)
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{}
	got := treeOutput(t, dc)
	assert.Contains(t, got, "Status:      ○ No revision yet\n")
	assert.Contains(t, got, "Triggers:    none (rollouts start only with kubectl stagehand rollout latest)")
	assert.Contains(t, got, "web   DeploymentConfig  ○ No revision yet  10m  ready 0/2\n")

	dc = treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseComplete, 0)
	rs := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 2, 0, time.Minute)
	got = treeOutput(t, dc, rs)
	assert.Contains(t, got, "└── web-1-deploy  Deployer          ○ Gone      -    the pod was deleted; the revision keeps its outcome")
	assert.Contains(t, got, "Status:      ⚠ Degraded, revision 1, Complete but only 0/2 ready")
	assert.Contains(t, got, "⚠ Complete", "a Complete revision without its ready pods is degraded")

	_, err := newTreeGetter(nil, &bytes.Buffer{}).list(context.Background())
	assert.EqualError(t, err, `deploymentconfig "web" not found in namespace "shop"`)
}

func TestGetStyles(t *testing.T) {
	dc := treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseFailed, 0)
	rs := treeRevision(dc, 1, v1alpha1.RevisionPhaseFailed, 0, 0, time.Minute)
	o := &tree.Objects{DC: dc, ReplicaSets: []*appsv1.ReplicaSet{rs}}

	var colored, ascii bytes.Buffer
	tree.Build(o, nil).Render(&colored, tree.Style{Color: true, Now: treeNow})
	assert.Contains(t, colored.String(), "\x1b[31m✖ Failed\x1b[0m", "a failure is red on a terminal")
	tree.Build(o, nil).Render(&ascii, tree.Style{ASCII: true, Now: treeNow})
	assert.Contains(t, ascii.String(), "`-- web-1             Revision 1        x Failed  60s")
	assert.NotContains(t, ascii.String(), "✖")

	style, tty := getStyle(&bytes.Buffer{}, getOptions{})
	assert.False(t, tty, "a buffer is no terminal")
	assert.False(t, style.Color)
}

func TestGetShowsAFrozenRollout(t *testing.T) {
	strategy := treeRolling()
	strategy.OnFailure = v1alpha1.OnFailureFreeze
	dc := treeDC(strategy, 2, v1alpha1.RevisionPhaseFailed, 4)
	dc.Status.Frozen = "web-2"
	rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 2, 2, 10*time.Minute)
	rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseFailed, 2, 2, time.Minute)
	var out bytes.Buffer
	tree.Build(&tree.Objects{DC: dc, ReplicaSets: []*appsv1.ReplicaSet{rs1, rs2}}, nil).Render(&out, tree.Style{Now: treeNow})
	assert.Contains(t, out.String(), "Status:      ✖ Failed, frozen, revision 2, no revision is scaled until rollout retry, rollout undo or a new revision")
	assert.Contains(t, out.String(), "Rolling, onFailure Freeze")
}

func TestGetShowsEachRevisionsNotificationReceipts(t *testing.T) {
	dc := treeDC(treeRolling(), 2, v1alpha1.RevisionPhaseComplete, 2)
	rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 0, 0, 10*time.Minute)
	rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseComplete, 2, 2, time.Minute)
	receipt := func(event v1alpha1.NotifyEvent, phase v1alpha1.DeliveryPhase, code, attempts int32, sentAgo time.Duration) *v1alpha1.RolloutDelivery {
		d := &v1alpha1.RolloutDelivery{ObjectMeta: metav1.ObjectMeta{Name: "web-2-" + string(event), CreationTimestamp: metav1.NewTime(treeNow.Add(-sentAgo))},
			Spec:   v1alpha1.RolloutDeliverySpec{Notifier: "team", Receiver: "ops", Revision: rs2.Name, Event: event},
			Status: v1alpha1.RolloutDeliveryStatus{Phase: phase, ResponseCode: code, Attempts: attempts, Message: "answered 500"}}
		d.Status.LastAttemptTime = &metav1.Time{Time: treeNow.Add(-sentAgo)}
		return d
	}
	o := &tree.Objects{DC: dc, ReplicaSets: []*appsv1.ReplicaSet{rs1, rs2}, Receipts: []*v1alpha1.RolloutDelivery{
		receipt(v1alpha1.NotifyStarted, v1alpha1.DeliveryDelivered, 200, 1, 50*time.Second),
		receipt(v1alpha1.NotifyComplete, v1alpha1.DeliveryPending, 500, 3, 5*time.Second)}}
	var out bytes.Buffer
	tree.Build(o, nil).Render(&out, tree.Style{ASCII: true, Now: treeNow})
	assert.Contains(t, out.String(), `
|   |-- ops           Notified Started   + Delivered  50s  answer 200, notifier team
|   `+"`"+`-- ops           Notified Complete  ~ Pending    5s   answer 500, 3 attempts, notifier team, answered 500
`+"`"+`-- web-1`, "the receipts under their revision, in the order they were made")
}

func TestGetCompletesDCNames(t *testing.T) {
	sh := stagehandfake.NewSimpleClientset(
		&v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}},
		&v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: "shop"}},
		&v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"}},
		&v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "wiki", Namespace: "other"}})
	ctx := context.Background()
	assert.Equal(t, []string{"web", "worker"}, getDCNameCompletions(ctx, sh, "shop", "w"))
	assert.Equal(t, []string{"dc/web"}, getDCNameCompletions(ctx, sh, "shop", "dc/we"))
	assert.Equal(t, []string{"api", "web", "worker"}, getDCNameCompletions(ctx, sh, "shop", ""))
}

// A deployer pod that the apiserver never admitted is "Not created", with the refusal, not
// a deleted pod; one that waits for quota says what it waits for.
func TestGetShowsADeployerThatWasNeverCreated(t *testing.T) {
	dc := treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseFailed, 0)
	rs := treeRevision(dc, 1, v1alpha1.RevisionPhaseFailed, 0, 0, time.Minute)
	rs.Annotations[v1alpha1.StatusReasonAnnotation] = "DeployerPodCreateFailed: the apiserver refused the deployer pod web-1-deploy: " +
		"failed quota: q: must specify limits.ephemeral-storage"
	got := treeOutput(t, dc, rs)
	assert.Contains(t, got, "web-1-deploy  Deployer          ✖ Not created  -    the apiserver refused the deployer pod web-1-deploy: failed quota: q: must specify limits.ephemeral-storage")
	assert.NotContains(t, got, "the pod was deleted")

	dc = treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseNew, 0)
	rs = treeRevision(dc, 1, v1alpha1.RevisionPhaseNew, 0, 0, time.Minute)
	rs.Annotations[v1alpha1.WaitingAnnotation] = "DeployerPodWaiting: exceeded quota: q, requested: limits.cpu=1"
	got = treeOutput(t, dc, rs)
	assert.Contains(t, got, "web-1-deploy  Deployer          ⚠ Not created yet  -    exceeded quota: q, requested: limits.cpu=1")
}
