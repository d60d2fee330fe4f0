//go:build e2e

package e2e

// The failure events of RolloutNotifiers (docs/notifications.md): a hook, an ExecutionHook
// and a defer step that fail in the pods of a DC, each sent once with its output; the
// notifier's status; and a receiver's template checked at admission.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestNotifierSendsHookExecutionHookAndDeferStepFailures(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	ctx := context.Background()
	r := startReceiver(t, "s3cret")
	notifierFor(t, s.NS, r.srv.URL, func(n *stagehandv1.RolloutNotifier) {
		n.Spec.Events = []stagehandv1.NotifyEvent{stagehandv1.NotifyComplete, stagehandv1.NotifyHookFailed,
			stagehandv1.NotifyExecutionHookFailed, stagehandv1.NotifyDeferStepFailed}
	})
	// A step that fails for every pod of the DC that goes away
	createDeferPolicy(t, s.NS, "web", nil, stagehandv1.DeferStep{Name: "hand-over", Image: images.Shell,
		Command: []string{"/bin/sh", "-c", "echo hand-over broke; exit 2"}})

	// A pre hook that fails, ignored: the revision completes
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyIgnore, "echo pre-1 broke; exit 4")}
	s.DeploymentConfig(dc).When().Created()
	s.Then().RevisionPhase(1, complete)

	// A user's ExecutionHook that fails in the DC's pods
	hookAction(t, s.NS, "quiesce", 5, "echo quiesce broke; exit 3")
	_, err := env.Stagehand.StagehandV1alpha1().ExecutionHooks(s.NS).Create(ctx, selectorHook("quiesce", "quiesce", "web", "app"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitHook(t, s.NS, "quiesce", "Failed", func(h *stagehandv1.ExecutionHook) bool { return h.Status.Phase == stagehandv1.ExecutionHookFailed })

	// One of its pods goes away: its step fails
	pods := env.WaitForPods(t, s.NS, stagehandv1.ConfigLabel+"=web,!"+stagehandv1.HookStageLabel+",!"+stagehandv1.DeployerPodForLabel,
		podTimeout, "2 pods with the defer finalizer", func(pods []*corev1.Pod) bool {
			n := 0
			for _, p := range pods {
				if stagehandv1.HasDeferFinalizer(p) {
					n++
				}
			}
			return n == 2
		})
	deletePod(t, s.NS, pods[0].Name, nil)

	r.waitEvents(t, []string{"web-1 Complete", "web-1 HookFailed", "web-1 ExecutionHookFailed", "web-1 DeferStepFailed"})
	hook := r.find("web-1", stagehandv1.NotifyHookFailed)
	assert.Equal(t, "pre", hook.payload.Step)
	assert.Contains(t, hook.payload.Message, "exit code 4")
	assert.Contains(t, hook.payload.LogTail, "pre-1 broke")
	exec := r.find("web-1", stagehandv1.NotifyExecutionHookFailed)
	assert.Equal(t, "ExecutionHook quiesce", exec.payload.Step)
	assert.Contains(t, exec.payload.LogTail, "quiesce broke")
	step := r.find("web-1", stagehandv1.NotifyDeferStepFailed)
	assert.Contains(t, step.payload.Message, pods[0].Name)
	assert.Contains(t, step.payload.Message, "step 1/1 failed")

	// The notifier counts its receipts and is Ready
	require.Eventually(t, func() bool {
		n, err := env.Stagehand.StagehandV1alpha1().RolloutNotifiers(s.NS).Get(ctx, "team", metav1.GetOptions{})
		return err == nil && n.Status.Delivered == 4 && n.Status.Failed == 0 &&
			meta.IsStatusConditionTrue(n.Status.Conditions, stagehandv1.NotifierConditionReady)
	}, 30*time.Second, 200*time.Millisecond, "the notifier's status: 4 delivered, Ready")

	// get dc/web shows the receipts under their revision
	out := pluginOK(t, s.NS, "get", "dc/web", "--ascii").Stdout
	for _, e := range []string{"Complete", "HookFailed", "ExecutionHookFailed", "DeferStepFailed"} {
		assert.Regexp(t, `ops +Notified `+e+` +\+ Delivered +\S+ +answer 200, notifier team`, out)
	}
}

func TestNotifierSaysWhenItCannotSend(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	webhook := func(secret, template string) []stagehandv1.NotifyReceiver {
		return []stagehandv1.NotifyReceiver{{Name: "ops", Webhook: &stagehandv1.WebhookReceiver{Template: template,
			URL: stagehandv1.SecretKey{SecretName: secret, Key: "url"}, SigningKey: stagehandv1.SecretKey{SecretName: secret, Key: "hmac"}}}}
	}
	n := &stagehandv1.RolloutNotifier{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: stagehandv1.RolloutNotifierSpec{Selector: &metav1.LabelSelector{}, Events: []stagehandv1.NotifyEvent{stagehandv1.NotifyFailed},
			Receivers: webhook("hook", `{"text": "{{ .Event "}`)}}

	// A template whose action is not closed is refused at admission
	_, err := env.Stagehand.StagehandV1alpha1().RolloutNotifiers(ns).Create(ctx, n, dryRun)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.receivers[0].webhook.template: Invalid value")
	assert.Contains(t, err.Error(), "does not parse: every {{ needs its }}")

	// A template that admission lets through but Go does not parse, and a Secret that is
	// not there: not Ready, with the reason, an event, and again once the Secret exists
	n.Spec.Receivers = webhook("hook", `{{ .Event | nosuchfunc }}`)
	_, err = env.Stagehand.StagehandV1alpha1().RolloutNotifiers(ns).Create(ctx, n, metav1.CreateOptions{})
	require.NoError(t, err)
	ready := func(name string) *metav1.Condition {
		got, err := env.Stagehand.StagehandV1alpha1().RolloutNotifiers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return meta.FindStatusCondition(got.Status.Conditions, stagehandv1.NotifierConditionReady)
	}
	require.Eventually(t, func() bool {
		c := ready("team")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == stagehandv1.ReasonSecretUnreadable
	}, 30*time.Second, 200*time.Millisecond, "not Ready: the Secret is missing")
	assert.Contains(t, ready("team").Message, `secrets "hook" not found`)
	require.Eventually(t, func() bool { return len(eventsWithReason(t, ns, stagehandv1.EventNotifierNotReady)) > 0 },
		30*time.Second, 200*time.Millisecond, "a NotifierNotReady event")

	createHookSecret(t, ns, "http://127.0.0.1:1")
	require.Eventually(t, func() bool {
		c := ready("team")
		return c != nil && c.Reason == stagehandv1.ReasonTemplateInvalid
	}, time.Minute, 500*time.Millisecond, "rechecked once the Secret exists: now the template is what is wrong")
	assert.True(t, strings.Contains(ready("team").Message, "nosuchfunc"), ready("team").Message)
}
