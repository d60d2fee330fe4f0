//go:build e2e

package e2e

// RolloutNotifiers (docs/notifications.md) on the local cluster, against an HTTP receiver
// that the test runs: one signed POST per (revision, event) through a rollout with a pre
// hook, a paused canary and its promote, a failure that rolls back, and a Freeze.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/notify"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// receiver is an HTTP receiver of notifications that keeps every POST.
type receiver struct {
	mu     sync.Mutex
	posts  []post
	answer func() int // the status to answer; 200 when nil
	srv    *httptest.Server
}

type post struct {
	key        string
	signed     bool
	payload    notify.Payload
	receivedAt time.Time
}

func startReceiver(t *testing.T, signingKey string) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var p notify.Payload
		_ = json.Unmarshal(body, &p)
		code := http.StatusOK
		r.mu.Lock()
		if r.answer != nil {
			code = r.answer()
		}
		if code < 300 {
			r.posts = append(r.posts, post{key: req.Header.Get(stagehandv1.IdempotencyKeyHeader), payload: p, receivedAt: time.Now(),
				signed: notify.Verify([]byte(signingKey), body, req.Header.Get(stagehandv1.SignatureHeader))})
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// events are the delivered posts as "<revision> <event>", sorted.
func (r *receiver) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.posts {
		out = append(out, p.payload.RevisionName+" "+string(p.payload.Event))
	}
	sort.Strings(out)
	return out
}

func (r *receiver) find(revision string, e stagehandv1.NotifyEvent) *post {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.posts {
		if r.posts[i].payload.RevisionName == revision && r.posts[i].payload.Event == e {
			return &r.posts[i]
		}
	}
	return nil
}

// waitEvents waits until the receiver got want (sorted), then a little longer, and
// requires exactly want: nothing missing, nothing twice.
func (r *receiver) waitEvents(t *testing.T, want []string) {
	t.Helper()
	sort.Strings(want)
	require.Eventually(t, func() bool { return len(r.events()) >= len(want) }, 2*time.Minute, 200*time.Millisecond,
		"the receiver to get %v; it got %v", want, r.events())
	time.Sleep(3 * time.Second)
	assert.Equal(t, want, r.events(), "each (revision, event) exactly once")
	keys := map[string]int{}
	r.mu.Lock()
	for _, p := range r.posts {
		keys[p.key]++
		assert.True(t, p.signed, "the signature of %s %s verifies", p.payload.RevisionName, p.payload.Event)
	}
	r.mu.Unlock()
	for k, n := range keys {
		assert.Equal(t, 1, n, "idempotency key %s delivered once", k)
	}
}

// createHookSecret creates the Secret "hook" of a receiver: its url and signing key.
func createHookSecret(t *testing.T, ns, url string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		StringData: map[string]string{"url": url, "hmac": "s3cret"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// notifierFor creates the Secret and a RolloutNotifier of every event for all the DCs of
// ns, sending to url.
func notifierFor(t *testing.T, ns, url string, mutate func(*stagehandv1.RolloutNotifier)) {
	t.Helper()
	ctx := context.Background()
	createHookSecret(t, ns, url)
	n := &stagehandv1.RolloutNotifier{
		ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: stagehandv1.RolloutNotifierSpec{
			Selector: &metav1.LabelSelector{},
			Events: []stagehandv1.NotifyEvent{stagehandv1.NotifyStarted, stagehandv1.NotifyWaiting, stagehandv1.NotifyComplete,
				stagehandv1.NotifyFailed, stagehandv1.NotifyRolledBack, stagehandv1.NotifyFrozen},
			Receivers: []stagehandv1.NotifyReceiver{{Name: "ops", Webhook: &stagehandv1.WebhookReceiver{
				URL: stagehandv1.SecretKey{SecretName: "hook", Key: "url"}, SigningKey: stagehandv1.SecretKey{SecretName: "hook", Key: "hmac"}}}},
		},
	}
	if mutate != nil {
		mutate(n)
	}
	_, err := env.Stagehand.StagehandV1alpha1().RolloutNotifiers(ns).Create(ctx, n, metav1.CreateOptions{})
	require.NoError(t, err)
	time.Sleep(time.Second) // revisions created in the notifier's second are its own
}

// rolloutOfEveryKind runs revision 1 (pre hook), 2 (a paused canary, promoted), 3 (a
// failing pre hook: rolled back) and 4 (the same with onFailure: Freeze); kill, when set,
// runs at each stage.
func rolloutOfEveryKind(t *testing.T, s *framework.Given, kill func()) {
	t.Helper()
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating")}
	s.DeploymentConfig(dc).When().Created()
	kill()
	s.Then().RevisionPhase(1, complete)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams.Steps = []stagehandv1.RollingStep{{SetReplicas: ptr.To(intstr.FromInt32(1))}, {Pause: &stagehandv1.PauseStep{}}}
	})
	require.Eventually(t, func() bool {
		out := plugin(t, s.NS, "get", "dc/web").Stdout
		return strings.Contains(out, "paused")
	}, 2*time.Minute, 500*time.Millisecond, "revision 2 paused at its step")
	kill()
	pluginOK(t, s.NS, "rollout", "promote", "dc/web")
	s.Then().RevisionPhase(2, complete)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Strategy.RollingParams.Steps = nil
		dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo schema-3 broke; exit 1")
	})
	kill()
	s.Then().RevisionPhase(3, stagehandv1.RevisionPhaseFailed)

	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 4)
		dc.Spec.Strategy.OnFailure = stagehandv1.OnFailureFreeze
		dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo schema-4 broke; exit 1")
	})
	s.Then().RevisionPhase(4, stagehandv1.RevisionPhaseFailed)
	kill()
}

var everyKind = []string{
	"web-1 Started", "web-1 Complete",
	"web-2 Started", "web-2 Waiting", "web-2 Complete",
	"web-3 Started", "web-3 Failed", "web-3 RolledBack",
	"web-4 Started", "web-4 Failed", "web-4 Frozen",
}

func TestNotifierSendsEachEventOnceSigned(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	r := startReceiver(t, "s3cret")
	notifierFor(t, s.NS, r.srv.URL, nil)
	rolloutOfEveryKind(t, s, func() {})
	r.waitEvents(t, everyKind)

	// The payloads carry the revision, the images, the reason and the hook's log tail
	failed := r.find("web-3", stagehandv1.NotifyFailed)
	require.NotNil(t, failed)
	assert.Equal(t, int64(3), failed.payload.Revision)
	assert.NotEmpty(t, failed.payload.Images)
	assert.NotEmpty(t, failed.payload.Reason)
	assert.Contains(t, failed.payload.LogTail, "schema-3 broke")
	assert.Equal(t, notify.PayloadVersion, failed.payload.Version)
	assert.Contains(t, r.find("web-3", stagehandv1.NotifyRolledBack).payload.Message, "rolled back to web-2")
	assert.Contains(t, r.find("web-2", stagehandv1.NotifyWaiting).payload.Step, "paused")

	// And rollout history shows the receipts per revision
	history := pluginOK(t, s.NS, "rollout", "history", "dc/web").Stdout
	assert.Contains(t, history, "NOTIFIED")
	assert.Contains(t, history, "ops: Failed 200, RolledBack 200, Started 200")

	// And every receipt says Delivered with the answer's code
	list, err := env.Stagehand.StagehandV1alpha1().RolloutDeliveries(s.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, len(everyKind), len(list.Items), "one receipt per (revision, event)")
	for _, d := range list.Items {
		assert.Equal(t, stagehandv1.DeliveryDelivered, d.Status.Phase, d.Name)
		assert.Equal(t, int32(200), d.Status.ResponseCode, d.Name)
	}
}

func TestNotifierLosesAndDoublesNothingAcrossLeaderKills(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	r := startReceiver(t, "s3cret")
	notifierFor(t, s.NS, r.srv.URL, nil)
	rolloutOfEveryKind(t, s, func() { env.KillController(t) })
	env.WaitForController(t)
	r.waitEvents(t, everyKind)
}

func TestNotifierRetriesAFailingReceiverAndGivesUpOnADeadOne(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	// A receiver that answers 500 for its first 30 s, then 200
	r := startReceiver(t, "s3cret")
	start := time.Now()
	r.answer = func() int {
		if time.Since(start) < 30*time.Second {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	notifierFor(t, s.NS, r.srv.URL, nil)
	began := time.Now()
	s.DeploymentConfig(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)).When().Created()
	s.Then().RevisionPhase(1, complete)
	assert.Less(t, time.Since(began), 30*time.Second, "the rollout went on while the receiver failed")
	r.waitEvents(t, []string{"web-1 Complete", "web-1 Started"})
	for _, p := range []*post{r.find("web-1", stagehandv1.NotifyStarted), r.find("web-1", stagehandv1.NotifyComplete)} {
		assert.False(t, p.receivedAt.Before(start.Add(30*time.Second)), "delivered after the retries")
	}

	// A receiver that never answers: marked Failed at the deadline, with an event
	stop := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select { // until the client gives up, or the test ends
		case <-req.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(dead.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for the handlers
	ns2 := env.Given(t)
	notifierFor(t, ns2.NS, dead.URL, func(n *stagehandv1.RolloutNotifier) {
		n.Spec.Events = []stagehandv1.NotifyEvent{stagehandv1.NotifyComplete}
		n.Spec.DeliveryDeadlineSeconds = ptr.To[int64](15)
	})
	ns2.DeploymentConfig(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)).When().Created()
	ns2.Then().RevisionPhase(1, complete)
	require.Eventually(t, func() bool {
		list, err := env.Stagehand.StagehandV1alpha1().RolloutDeliveries(ns2.NS).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Status.Phase == stagehandv1.DeliveryFailed
	}, time.Minute, 500*time.Millisecond, "the receipt Failed at its deadline")
	require.Eventually(t, func() bool { return len(eventsWithReason(t, ns2.NS, stagehandv1.EventNotificationFailed)) > 0 },
		30*time.Second, 500*time.Millisecond, "a NotificationFailed event")
}

// A notifier sends the values of the Secrets it names: only a user who may read them may
// name them (policies/notifier-secrets.yaml).
func TestNotifierNeedsTheRightToReadItsSecrets(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	_, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		StringData: map[string]string{"url": "http://127.0.0.1:1", "hmac": "k"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindClusterRole(t, ns, "nina", stagehandEditClusterRole) // may write notifiers, not read Secrets
	_, sh := impersonating(t, "nina")
	n := &stagehandv1.RolloutNotifier{
		ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: stagehandv1.RolloutNotifierSpec{Selector: &metav1.LabelSelector{}, Events: []stagehandv1.NotifyEvent{stagehandv1.NotifyFailed},
			Receivers: []stagehandv1.NotifyReceiver{{Name: "ops", Webhook: &stagehandv1.WebhookReceiver{
				URL: stagehandv1.SecretKey{SecretName: "hook", Key: "url"}, SigningKey: stagehandv1.SecretKey{SecretName: "hook", Key: "hmac"}}}}},
	}
	var refusal error
	waitForPolicy(t, "stagehand-notifier-secrets", func() error {
		_, refusal = sh.StagehandV1alpha1().RolloutNotifiers(ns).Create(ctx, n, dryRun)
		return refusal
	})
	require.Error(t, refusal)
	assert.Contains(t, refusal.Error(), "spec.receivers names Secrets you may not all read (hook, hook): a notifier sends their values; you need get on each of them in namespace "+ns)

	// Once she may get the Secret, the same notifier is admitted
	_, err = env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-hook"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hook"}, Verbs: []string{"get"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nina-read-hook"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "nina"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-hook"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := sh.StagehandV1alpha1().RolloutNotifiers(ns).Create(ctx, n, metav1.CreateOptions{})
		return err == nil
	}, rbacPropagationTimeout, 200*time.Millisecond, "admitted once she may read the Secret")
}
