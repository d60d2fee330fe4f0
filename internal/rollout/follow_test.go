package rollout

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
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

// A hook event names its revision's hook: the previous revision's last hook event, from
// the same second, is not this revision's.
func TestNamesHookOf(t *testing.T) {
	assert.True(t, namesHookOf("post hook web-2-hook-post started", "web-2"))
	assert.True(t, namesHookOf("pre hook web-2-hook-pre-3 (attempt 3 of 3) failed (exit 1): x", "web-2"))
	assert.False(t, namesHookOf("post hook web-1-hook-post succeeded", "web-2"))
	assert.False(t, namesHookOf("post hook web-12-hook-post succeeded", "web-1"), "web-1 is a prefix of web-12")
}

const followNS = "shop"

// followFixture is a DC web in fake clientsets, followed by a follower that writes to out.
type followFixture struct {
	t   *testing.T
	dc  *v1alpha1.DeploymentConfig
	c   *Client
	f   *follower
	out *bytes.Buffer
}

func newFollowFixture(t *testing.T, dc *v1alpha1.DeploymentConfig, revisions ...*appsv1.ReplicaSet) *followFixture {
	dc.Namespace, dc.UID = followNS, "dc-uid"
	kube := kubefake.NewClientset()
	for _, rs := range revisions {
		rs.Namespace = followNS
		_, err := kube.AppsV1().ReplicaSets(followNS).Create(context.Background(), rs, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	c := &Client{Kube: kube, Stagehand: stagehandfake.NewSimpleClientset(dc), Namespace: followNS}
	out := &bytes.Buffer{}
	return &followFixture{t: t, dc: dc, c: c, out: out,
		f: &follower{c: c, name: dc.Name, out: out, seen: map[string]bool{}, images: map[string]string{}}}
}

// revision builds revision n of the fixture's DC, owned by it.
func (x *followFixture) revision(n int64, phase v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	return testutil.Revision(x.dc, n, 2, phase)
}

// setPhase writes the phase (and, for Failed, the reason) of revision rs.
func (x *followFixture) setPhase(name string, phase v1alpha1.RevisionPhase, reason string) {
	rss := x.c.Kube.AppsV1().ReplicaSets(followNS)
	rs, err := rss.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(x.t, err)
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(phase)
	if reason != "" {
		rs.Annotations[v1alpha1.StatusReasonAnnotation] = reason
	}
	_, err = rss.Update(context.Background(), rs, metav1.UpdateOptions{})
	require.NoError(x.t, err)
}

// hookEvent records a hook event on the DC as the deployer does, named after its time.
func (x *followFixture) hookEvent(at time.Time, reason, message string) {
	_, err := x.c.Kube.CoreV1().Events(followNS).Create(context.Background(), &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: x.dc.Name + "." + at.Format("150405.000000000"), Namespace: followNS,
			UID: types.UID("event-" + at.Format("150405.000000000"))},
		InvolvedObject: corev1.ObjectReference{Kind: "DeploymentConfig", Name: x.dc.Name, UID: x.dc.UID, Namespace: followNS},
		Reason:         reason, Message: message,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at.Truncate(time.Second)), Count: 1,
	}, metav1.CreateOptions{})
	require.NoError(x.t, err)
}

// A hook fails and its revision fails between two reads: the hook lines come before the
// Failed line, in the order the hooks ran, as they happened.
func TestFollowPrintsHooksBeforeTheEndTheyLedTo(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "app:2", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Status.LatestVersion = 2
	x := newFollowFixture(t, dc)
	rs := x.revision(2, v1alpha1.RevisionPhaseRunning)
	rs.Namespace = followNS
	_, err := x.c.Kube.AppsV1().ReplicaSets(followNS).Create(context.Background(), rs, metav1.CreateOptions{})
	require.NoError(t, err)

	done, err := x.f.step(context.Background())
	require.NoError(t, err)
	require.False(t, done)

	// Between two reads: the pre hook starts and fails within one second (the later event
	// is listed first), and the deployer's end makes the revision Failed.
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	x.hookEvent(at.Add(800*time.Millisecond), v1alpha1.EventHookFailed, "pre hook web-2-hook-pre failed (exit 4): the rollout is aborted")
	x.hookEvent(at.Add(100*time.Millisecond), v1alpha1.EventHookStarted, "pre hook web-2-hook-pre started")
	x.setPhase("web-2", v1alpha1.RevisionPhaseFailed, "HookFailed: pre hook failed")

	done, err = x.f.step(context.Background())
	assert.True(t, done)
	var failed *RolloutFailed
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, "HookFailed: pre hook failed", failed.Reason)
	assert.Equal(t, `Following revision web-2 (cause: unknown)
revision web-2: Running
revision web-2: 0 of 2 pods ready
revision web-2: pre hook web-2-hook-pre started
revision web-2: pre hook web-2-hook-pre failed (exit 4): the rollout is aborted
revision web-2: Failed
`, x.out.String())
}

// Read once, a revision that ran its hooks and completed prints its phase before the
// hooks and its end after them.
func TestFollowOrdersOneReadOfAWholeRollout(t *testing.T) {
	dc := testutil.DeploymentConfig("web", "app:1", 2, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate})
	dc.Status.LatestVersion = 1
	x := newFollowFixture(t, dc)
	rs := x.revision(1, v1alpha1.RevisionPhaseComplete)
	rs.Namespace = followNS
	rs.Status.ReadyReplicas = 2
	_, err := x.c.Kube.AppsV1().ReplicaSets(followNS).Create(context.Background(), rs, metav1.CreateOptions{})
	require.NoError(t, err)
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	x.hookEvent(at.Add(3*time.Second), v1alpha1.EventHookSucceeded, "post hook web-1-hook-post succeeded")
	x.hookEvent(at, v1alpha1.EventHookStarted, "pre hook web-1-hook-pre started")
	x.hookEvent(at.Add(2*time.Second), v1alpha1.EventHookStarted, "post hook web-1-hook-post started")
	x.hookEvent(at.Add(time.Second), v1alpha1.EventHookSucceeded, "pre hook web-1-hook-pre succeeded")

	done, err := x.f.step(context.Background())
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, `Following revision web-1 (cause: unknown)
revision web-1: pre hook web-1-hook-pre started
revision web-1: pre hook web-1-hook-pre succeeded
revision web-1: post hook web-1-hook-post started
revision web-1: post hook web-1-hook-post succeeded
revision web-1: Complete
revision web-1 is complete: 2 of 2 pods ready
`, x.out.String())
}

// imageDC is web with a ConfigChange trigger and an automatic ImageChange trigger on its
// container app, never rolled out.
func imageDC() *v1alpha1.DeploymentConfig {
	dc := testutil.DeploymentConfig("web", " ", 1, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling})
	dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{
		{Type: v1alpha1.DeploymentTriggerOnConfigChange},
		{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
			Automatic: true, ContainerNames: []string{"app"}, From: v1alpha1.ImageReference{Image: "registry.example/app:latest"}}},
	}
	return dc
}

// While the first rollout waits for an image trigger, status says which trigger, for
// which container, and what its status says, once per change; a timeout names the wait.
func TestFollowSaysWhatTheFirstRolloutWaitsFor(t *testing.T) {
	dc := imageDC()
	dc.Status.TriggerImages = []v1alpha1.TriggerImageStatus{{From: "registry.example/app:latest", Error: "MANIFEST_UNKNOWN: manifest unknown"}}
	x := newFollowFixture(t, dc)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := x.c.Follow(ctx, "web", x.out)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "stopped waiting for the rollout of deploymentconfig/web (last seen: waiting for image triggers): context deadline exceeded", err.Error())
	assert.Equal(t, "Waiting for the ImageChange trigger of container app (registry.example/app:latest) to resolve an image: MANIFEST_UNKNOWN: manifest unknown\n",
		x.out.String())

	// A second read of the same state prints nothing; a changed status prints again.
	_, err = x.f.step(context.Background())
	require.NoError(t, err)
	first := x.out.String()
	_, err = x.f.step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, first, x.out.String(), "the same wait is printed once")
}

func TestImagesWaiting(t *testing.T) {
	const tag = "registry.example/app:latest"
	tests := []struct {
		name      string
		automatic bool
		pinned    string
		status    []v1alpha1.TriggerImageStatus
		want      []string
	}{
		{name: "not checked yet", automatic: true,
			want: []string{"Waiting for the ImageChange trigger of container app (" + tag + ") to resolve an image: the tag has not been checked yet"}},
		{name: "the registry's answer", automatic: true, status: []v1alpha1.TriggerImageStatus{{From: tag, Error: "not found"}},
			want: []string{"Waiting for the ImageChange trigger of container app (" + tag + ") to resolve an image: not found"}},
		{name: "resolved, not pinned yet", automatic: true, status: []v1alpha1.TriggerImageStatus{{From: tag, Image: "registry.example/app@sha256:1"}},
			want: []string{"Waiting for the ImageChange trigger of container app (" + tag + ") to resolve an image: resolved to registry.example/app@sha256:1; the controller has not pinned it in the template yet"}},
		{name: "automatic and pinned", automatic: true, pinned: "registry.example/app@sha256:1"},
		{name: "not automatic, resolved", status: []v1alpha1.TriggerImageStatus{{From: tag, Image: "registry.example/app@sha256:1"}}},
		{name: "not automatic, not resolved",
			want: []string{"Waiting for the ImageChange trigger of container app (" + tag + ") to resolve an image: the tag has not been checked yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := imageDC()
			p := dc.Spec.Triggers[1].ImageChangeParams
			p.Automatic, p.LastTriggeredImage = tt.automatic, tt.pinned
			dc.Status.TriggerImages = tt.status
			var got []string
			for _, w := range imagesWaiting(dc) {
				got = append(got, w.Line)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestContainersText(t *testing.T) {
	assert.Equal(t, "container app", containersText([]string{"app"}))
	assert.Equal(t, "containers app, sidecar", containersText([]string{"app", "sidecar"}))
}
