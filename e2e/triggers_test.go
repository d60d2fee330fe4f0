//go:build e2e

package e2e

// Image-change triggers end to end, against the local cluster's real registry (Debian's
// docker-registry): images are pushed from the test with go-containerregistry, and the
// installed controller polls the tags every 2 s (see the framework's localControllerArgs).
// The pinned images are unknown to the node agent's image map, so their containers are
// simulated: the rollouts are real, the processes are not.

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// pushRandom pushes new random content to the tag ref and returns the pinned reference
// (repo@sha256:...) it now resolves to.
func pushRandom(t *testing.T, ref string, opts ...remote.Option) string {
	t.Helper()
	img, err := random.Image(512, 1)
	require.NoError(t, err)
	return push(t, ref, img, opts...)
}

// push pushes img to the tag ref and returns the pinned reference.
func push(t *testing.T, ref string, img v1.Image, opts ...remote.Option) string {
	t.Helper()
	tag := mustTag(t, ref)
	require.NoError(t, remote.Write(tag, img, opts...), "pushing %s", ref)
	digest, err := img.Digest()
	require.NoError(t, err)
	return tag.Context().Name() + "@" + digest.String()
}

// imageTrigger is an ImageChange trigger on the containers for the tag.
func imageTrigger(automatic bool, tag string, containers ...string) stagehandv1.DeploymentTriggerPolicy {
	return stagehandv1.DeploymentTriggerPolicy{Type: stagehandv1.DeploymentTriggerOnImageChange,
		ImageChangeParams: &stagehandv1.DeploymentTriggerImageChangeParams{
			Automatic: automatic, ContainerNames: containers, From: stagehandv1.ImageReference{Image: tag}}}
}

// withSidecar adds a second container whose image the node agent simulates.
func withSidecar(dc *stagehandv1.DeploymentConfig) *stagehandv1.DeploymentConfig {
	dc.Spec.Template.Spec.Containers = append(dc.Spec.Template.Spec.Containers,
		corev1.Container{Name: "sidecar", Image: "registry.example/sidecar:placeholder"})
	return dc
}

func containerImage(rsTemplate corev1.PodTemplateSpec, container string) string {
	for _, c := range rsTemplate.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

func revisionTemplate(t *testing.T, ns, rs string) corev1.PodTemplateSpec {
	t.Helper()
	got, err := env.Kube.AppsV1().ReplicaSets(ns).Get(context.Background(), rs, metav1.GetOptions{})
	require.NoError(t, err)
	return got.Spec.Template
}

// imagesResolved is the DC's ImagesResolved condition, or nil.
func imagesResolved(dc *stagehandv1.DeploymentConfig) *metav1.Condition {
	return meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionImagesResolved)
}

func triggerStatus(dc *stagehandv1.DeploymentConfig, from string) stagehandv1.TriggerImageStatus {
	for _, st := range dc.Status.TriggerImages {
		if st.From == from {
			return st
		}
	}
	return stagehandv1.TriggerImageStatus{}
}

func TestImageTriggerPinsDigestsAndRollsOutOnlyOnNewContent(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := withSidecar(framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling))
	s := env.Given(t).DeploymentConfig(dc)
	stable, marker := reg.Image(s.NS+"/app:stable"), reg.Image(s.NS+"/marker:latest")
	first := pushRandom(t, stable)
	markerV1 := pushRandom(t, marker)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{
		{Type: stagehandv1.DeploymentTriggerOnConfigChange},
		imageTrigger(true, stable, "app"),
		imageTrigger(false, marker, "sidecar"),
	}

	// When the config is created, then revision 1 waits for the tags and runs the pinned digest
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	assert.Equal(t, first, containerImage(revisionTemplate(t, s.NS, "web-1"), "app"), "the container runs the digest, not the tag")
	got := s.Get()
	assert.Equal(t, first, got.Spec.Triggers[1].ImageChangeParams.LastTriggeredImage)
	assert.Equal(t, markerV1, triggerStatus(got, marker).Image, "automatic: false records the digest")
	assert.Equal(t, "registry.example/sidecar:placeholder", containerImage(revisionTemplate(t, s.NS, "web-1"), "sidecar"),
		"automatic: false does not touch its container")

	// When new content is pushed to the tag, then revision 2 runs the new digest, caused by the image
	second := pushRandom(t, stable)
	s.Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(2)
	assert.Equal(t, second, containerImage(revisionTemplate(t, s.NS, "web-2"), "app"))
	rs2, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(context.Background(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ImageChange", rs2.Annotations[stagehandv1.CauseAnnotation])
	assert.Equal(t, stable+" -> "+second, rs2.Annotations[stagehandv1.ImageTriggerAnnotation])
	res := pluginOK(t, s.NS, "rollout", "history", "dc/web")
	assert.Contains(t, res.Stdout, "ImageChange "+stable)

	// When the same content is pushed again, and the non-automatic tag moves twice
	// (each move is seen only after a later poll, so both moves mean the pollers ran)
	img, err := remote.Image(mustTag(t, stable), remote.WithTransport(http.DefaultTransport))
	require.NoError(t, err)
	assert.Equal(t, second, push(t, stable, img), "re-pushing the same content keeps the digest")
	for range 2 {
		moved := pushRandom(t, marker)
		s.Then().DeploymentConfig("the marker tag's new digest recorded", func(dc *stagehandv1.DeploymentConfig) bool {
			return triggerStatus(dc, marker).Image == moved
		})
	}
	// Then neither the same content nor the non-automatic trigger started a revision
	final := s.Get()
	assert.Equal(t, int64(2), final.Status.LatestVersion, "no rollout for the same digest or for automatic: false")
	c := imagesResolved(final)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status, "%+v", c)
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref, name.Insecure)
	require.NoError(t, err)
	return tag
}

func TestImageTriggersOnTwoContainersPinOnlyTheirOwn(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := withSidecar(framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRecreate))
	s := env.Given(t).DeploymentConfig(dc)
	appTag, sidecarTag := reg.Image(s.NS+"/app:v1"), reg.Image(s.NS+"/sidecar:v1")
	app1 := pushRandom(t, appTag)
	side1 := pushRandom(t, sidecarTag)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{imageTrigger(true, appTag, "app"), imageTrigger(true, sidecarTag, "sidecar")}
	s.When().Created().Then().RevisionPhase(1, complete)
	tpl := revisionTemplate(t, s.NS, "web-1")
	assert.Equal(t, app1, containerImage(tpl, "app"))
	assert.Equal(t, side1, containerImage(tpl, "sidecar"))

	// When only the sidecar's tag moves, then only the sidecar's image changes
	side2 := pushRandom(t, sidecarTag)
	s.Then().RevisionPhase(2, complete)
	tpl = revisionTemplate(t, s.NS, "web-2")
	assert.Equal(t, app1, containerImage(tpl, "app"), "the app's digest stays pinned")
	assert.Equal(t, side2, containerImage(tpl, "sidecar"))
}

func TestImageTriggerOnAProtectedRepositoryNeedsThePullSecret(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	private := reg.PrivateImage(s.NS + "/app:stable")
	pinned := pushRandom(t, private, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}))
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{{Type: stagehandv1.DeploymentTriggerOnConfigChange}, imageTrigger(true, private, "app")}

	// Without a pull secret the tag does not resolve: a clear condition and no rollout
	// (two controllers write these two conditions, in either order)
	s.When().Created().Then().DeploymentConfig("ImagesResolved False with the registry's answer, Progressing WaitingForImages", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		p := meta.FindStatusCondition(dc.Status.Conditions, stagehandv1.ConditionProgressing)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == stagehandv1.ReasonRegistryError && p != nil
	})
	got := s.Get()
	c := imagesResolved(got)
	assert.Contains(t, c.Message, private)
	assert.Contains(t, strings.ToUpper(c.Message), "UNAUTHORIZED")
	assert.NotContains(t, c.Message, reg.Password, "no secret in the status")
	assert.Equal(t, int64(0), got.Status.LatestVersion)
	p := meta.FindStatusCondition(got.Status.Conditions, stagehandv1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, stagehandv1.ReasonWaitingForImages, p.Reason)

	// When the DC's template names the pull secret, then the tag resolves and its digest rolls out
	env.CreatePullSecret(t, s.NS, "registry-pull")
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		dc.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-pull"}}
	}).Then().RevisionPhase(1, complete)
	assert.Equal(t, pinned, containerImage(revisionTemplate(t, s.NS, "web-1"), "app"))

	// And a second DC without imagePullSecrets resolves it once the pods' service account
	// has the secret, with no change to that DC at all
	api := framework.NewDeploymentConfig("api", 1, stagehandv1.DeploymentStrategyTypeRolling)
	api.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{imageTrigger(true, private, "app")}
	_, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).Create(context.Background(), api, metav1.CreateOptions{})
	require.NoError(t, err)
	env.WaitForDeploymentConfig(t, s.NS, "api", framework.RolloutTimeout, "api: ImagesResolved False", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sa, err := env.Kube.CoreV1().ServiceAccounts(s.NS).Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			return err
		}
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: "registry-pull"})
		_, err = env.Kube.CoreV1().ServiceAccounts(s.NS).Update(context.Background(), sa, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
	env.WaitForRevision(t, s.NS, "api", 1, framework.RolloutTimeout, "phase Complete", func(a map[string]string, _ int32) bool {
		return a[stagehandv1.PhaseAnnotation] == string(complete)
	})
	assert.Equal(t, pinned, containerImage(revisionTemplate(t, s.NS, "api-1"), "app"))

}

// flakyRegistry is a loopback front of the suite's registry that the test can take down
// and bring back on the same address, as a registry outage looks to the controller.
type flakyRegistry struct {
	t        *testing.T
	addr     string
	backend  *url.URL
	listener net.Listener
	server   *http.Server
}

func newFlakyRegistry(t *testing.T, backend string) *flakyRegistry {
	t.Helper()
	f := &flakyRegistry{t: t, backend: &url.URL{Scheme: "http", Host: backend}}
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

func (f *flakyRegistry) start(addr string) {
	f.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger for a moment
		if f.listener, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(f.t, err)
	f.addr = f.listener.Addr().String()
	f.server = &http.Server{Handler: httputil.NewSingleHostReverseProxy(f.backend), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.server.Serve(f.listener) }()
}

func (f *flakyRegistry) stop() { _ = f.server.Close() }

func TestImageTriggerSurvivesARegistryOutage(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	front := newFlakyRegistry(t, reg.Address)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	tag := front.addr + "/" + s.NS + "/app:stable"
	first := pushRandom(t, tag)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{imageTrigger(true, tag, "app")}
	s.When().Created().Then().RevisionPhase(1, complete)
	restarts := env.ControllerRestarts(t)

	// When the registry goes away, then the DC says so, and nothing rolls out or crashes
	front.stop()
	s.Then().DeploymentConfig("ImagesResolved False (registry down)", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, tag)
	})
	got := s.Get()
	assert.Equal(t, int64(1), got.Status.LatestVersion)
	assert.Equal(t, first, triggerStatus(got, tag).Image, "the last digest known is kept")
	assert.Equal(t, restarts, env.ControllerRestarts(t), "the controller did not crash")

	// When it comes back with new content, then the trigger recovers and rolls it out
	second := pushRandom(t, reg.Image(s.NS+"/app:stable"))
	front.start(front.addr)
	s.Then().RevisionPhase(2, complete).DeploymentConfig("ImagesResolved True again", func(dc *stagehandv1.DeploymentConfig) bool {
		c := imagesResolved(dc)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	assert.Equal(t, second, strings.Replace(containerImage(revisionTemplate(t, s.NS, "web-2"), "app"), front.addr, reg.Address, 1))
}

// A rollback switches the automatic trigger off, so that the next push does not roll
// forward again: the new digest is only recorded.
func TestImageTriggerDoesNotUndoARollback(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := framework.NewDeploymentConfig("web", 1, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	tag := reg.Image(s.NS + "/app:stable")
	good := pushRandom(t, tag)
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{{Type: stagehandv1.DeploymentTriggerOnConfigChange}, imageTrigger(true, tag, "app")}
	s.When().Created().Then().RevisionPhase(1, complete)
	bad := pushRandom(t, tag)
	s.Then().RevisionPhase(2, complete)
	require.Equal(t, bad, containerImage(revisionTemplate(t, s.NS, "web-2"), "app"))

	// When the bad release is rolled back
	res := pluginOK(t, s.NS, "rollout", "undo", "dc/web")
	assert.Contains(t, res.Stdout, "Automatic ImageChange triggers were switched off")
	assert.Contains(t, res.Stdout, tag+" (containers app)")
	s.Then().RevisionPhase(3, complete)
	assert.Equal(t, good, containerImage(revisionTemplate(t, s.NS, "web-3"), "app"), "the rollback runs the exact digest of revision 1")

	// Then a later push is recorded but not rolled out
	next := pushRandom(t, tag)
	s.Then().DeploymentConfig("the new digest recorded", func(dc *stagehandv1.DeploymentConfig) bool {
		return triggerStatus(dc, tag).Image == next
	})
	got := s.Get()
	assert.False(t, got.Spec.Triggers[1].ImageChangeParams.Automatic)
	assert.Equal(t, int64(3), got.Status.LatestVersion, "the push did not undo the rollback")
	assert.Equal(t, good, got.Spec.Template.Spec.Containers[0].Image)
}
