//go:build e2e

package e2e

// Honest status and ownership end to end: a strategy that exits 0 without rolling out, a
// ReplicaSet the apiserver refuses, and a pod that is not Stagehand's under a deployer
// pod's name.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// DESIGN.md §4 invariant 6: a Custom strategy that exits 0 without scaling leaves the
// previous revision serving and the new one Failed, with a reason that says so.
func TestCustomStrategyThatExitsZeroWithoutRollingOutFails(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy = stagehandv1.DeploymentStrategy{Type: stagehandv1.DeploymentStrategyTypeCustom,
			CustomParams: &stagehandv1.CustomDeploymentStrategyParams{Image: "stub/deployer:1",
				Command: []string{"/bin/sh", "-c", "echo 'all done (not really)'; exit 0"}}}
	}).Then().RevisionPhase(2, stagehandv1.RevisionPhaseFailed).RevisionReplicas(1, 2).ReadyPods(2).
		// The DC's status follows its revisions after a short gather window (docs/controller.md).
		DeploymentConfig("status phase Failed", func(dc *stagehandv1.DeploymentConfig) bool {
			return dc.Status.Phase == stagehandv1.RevisionPhaseFailed
		})

	reason, msg := revision.StatusReason(getRS(t, s.NS, "web-2"))
	assert.Equal(t, stagehandv1.ReasonEndedWithoutRollout, reason)
	assert.Contains(t, msg, "0 of 2 available")
	got := s.Get()
	assert.Equal(t, stagehandv1.RevisionPhaseFailed, got.Status.Phase)
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing).Status)
}

// DESIGN.md §4 invariant 7: a template the ReplicaSet validation refuses fails the new
// revision at once with the field's message; the DC never shows Complete for it, and one
// Warning event is recorded.
func TestRefusedReplicaSetFailsTheRevisionAtOnce(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// Record every status the DC goes through from now on.
	var mu sync.Mutex
	var seen []string
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "web").String()})
	require.NoError(t, err)
	go func() {
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*stagehandv1.DeploymentConfig); ok {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%d/%s", got.Status.LatestVersion, got.Status.Phase))
				mu.Unlock()
			}
		}
	}()

	// A port above 65535 passes the DeploymentConfig's schema but not the ReplicaSet's validation.
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
	})
	got := env.WaitForDeploymentConfig(t, s.NS, "web", 10*time.Second, "revision 2 Failed with the field's message",
		func(dc *stagehandv1.DeploymentConfig) bool {
			p := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
			return dc.Status.LatestVersion == 2 && dc.Status.Phase == stagehandv1.RevisionPhaseFailed &&
				p != nil && p.Reason == stagehandv1.ReasonRevisionCreateFailed
		})
	p := meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing)
	assert.Contains(t, p.Message, "containerPort")
	out, err := env.Kubectl(s.NS, "get", "dc", "web", "--no-headers")
	require.NoError(t, err, out)
	assert.Regexp(t, `web\s+2\s+.*Failed`, out, "kubectl get dc shows revision 2 Failed")

	// The controller does not retry: the state holds, with one Warning event.
	time.Sleep(3 * time.Second)
	events, err := env.Kube.CoreV1().Events(s.NS).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", stagehandv1.EventRevisionCreateFailed).String()})
	require.NoError(t, err)
	require.Len(t, events.Items, 1, env.DescribeEvents(s.NS))
	assert.LessOrEqual(t, events.Items[0].Count, int32(1), "recorded once, not aggregated from repeats")
	assert.Equal(t, corev1.EventTypeWarning, events.Items[0].Type)
	mu.Lock()
	defer mu.Unlock()
	for _, st := range seen {
		assert.NotEqual(t, "2/Complete", st, "revision 2 never shows Complete (statuses seen: %v)", seen)
	}
	_, err = env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no ReplicaSet web-2: %v", err)
	s.Then().RevisionReplicas(1, 1).ReadyPods(1)
}

// Stagehand never adopts, reads or deletes a pod it does not own: a pod created in
// advance under a revision's deployer-pod name survives the rollout, a cancel and a retry,
// and the revision fails with a reason that names it.
func TestForeignPodUnderTheDeployerNameIsNeverTouched(t *testing.T) {
	requireController(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2-deploy", Labels: map[string]string{"owner": "someone-else"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: framework.TestImages().TestApp}},
			TerminationGracePeriodSeconds: new(int64(1))},
	}
	foreign, err := env.Kube.CoreV1().Pods(s.NS).Create(context.Background(), foreign, metav1.CreateOptions{})
	require.NoError(t, err)

	s.When().TemplateChanged(2).Then().RevisionPhase(2, stagehandv1.RevisionPhaseFailed).RevisionReplicas(1, 1)
	reason, msg := revision.StatusReason(getRS(t, s.NS, "web-2"))
	assert.Equal(t, stagehandv1.ReasonDeployerPodNameTaken, reason)
	assert.Contains(t, msg, "web-2-deploy")

	// Its log is not shown as the deployer's.
	logs := plugin(t, s.NS, "rollout", "logs", "dc/web", "--revision", "2")
	assert.Equal(t, 1, logs.ExitCode, "%s", logs)
	assert.Contains(t, logs.Stderr, "not the deployer pod")

	// A retry fails the same way, and a cancel has nothing to cancel; neither deletes the pod.
	res := plugin(t, s.NS, "rollout", "retry", "dc/web")
	require.Equal(t, 0, res.ExitCode, "%s", res)
	env.WaitForRevision(t, s.NS, "web", 2, framework.RolloutTimeout, "retried and failed again", func(a map[string]string, _ int32) bool {
		return a[stagehandv1.RequestAnnotation] != "" && a[stagehandv1.PhaseAnnotation] == string(stagehandv1.RevisionPhaseFailed)
	})
	_ = plugin(t, s.NS, "rollout", "cancel", "dc/web")
	s.When().TemplateChanged(3).Then().RevisionPhase(3, complete).ReadyPods(1)

	still, err := env.Kube.CoreV1().Pods(s.NS).Get(context.Background(), "web-2-deploy", metav1.GetOptions{})
	require.NoError(t, err, "the foreign pod must survive every rollout, retry and cancel")
	assert.Equal(t, foreign.UID, still.UID)
	assert.Nil(t, still.DeletionTimestamp)
	assert.True(t, strings.Contains(still.Labels["owner"], "someone-else"))
}

func getRS(t *testing.T, ns, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return rs
}
