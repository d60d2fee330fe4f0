//go:build e2e && realnode

package realnode

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// buildFile is the file that each build of the test app pushed here adds, holding the
// build's name; the image's config carries the same name in buildEnv.
const (
	buildFile = "etc/stagehand-build"
	buildEnv  = "STAGEHAND_BUILD"
)

// TestRealNodeImageTriggerRollsOutTheNewDigest pushes two builds of the test app to one
// tag of the cluster's registry: the controller pins the tag's digest for revision 1 and,
// when the second build moves the tag, rolls revision 2 out with the new digest, whose
// pods containerd pulls and runs.
func TestRealNodeImageTriggerRollsOutTheNewDigest(t *testing.T) {
	requireController(t)
	reg := env.RequireRegistry(t)
	dc := realDC(t, "web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	s := env.Given(t).DeploymentConfig(dc)
	pods := env.RecordPodHistory(t, s.NS)
	stable := reg.Image(s.NS + "/app:stable")
	base := pulled(t, env.RealImage(t, "stagehand/testapp").Ref)
	first := pushBuild(t, stable, base, "build-1")
	dc.Spec.Triggers = []stagehandv1.DeploymentTriggerPolicy{
		{Type: stagehandv1.DeploymentTriggerOnConfigChange},
		{Type: stagehandv1.DeploymentTriggerOnImageChange, ImageChangeParams: &stagehandv1.DeploymentTriggerImageChangeParams{
			Automatic: true, ContainerNames: []string{"app"}, From: stagehandv1.ImageReference{Image: stable}}},
	}

	// When the DC is created, then revision 1 runs build-1, pinned by its digest
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(2)
	checkRevisionRunsBuild(t, s.NS, "web-1", first, "build-1")

	// When build-2 is pushed to the same tag, then revision 2 rolls out with its digest,
	// caused by the image, and its pods run the new content
	second := pushBuild(t, stable, base, "build-2")
	require.NotEqual(t, first, second, "the second build has a digest of its own")
	s.Then().RevisionPhase(2, complete).RevisionReplicas(1, 0).ReadyPods(2).OneDeployerPodPerRevision(2)
	rs, err := env.Kube.AppsV1().ReplicaSets(s.NS).Get(t.Context(), "web-2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ImageChange", rs.Annotations[stagehandv1.CauseAnnotation])
	assert.Equal(t, stable+" -> "+second, rs.Annotations[stagehandv1.ImageTriggerAnnotation])
	checkRevisionRunsBuild(t, s.NS, "web-2", second, "build-2")

	pods.LogAll(t)
	for _, p := range pods.Named("web-2-") {
		if p.Labels[stagehandv1.DeployerPodForLabel] == "" {
			require.NotEmpty(t, p.Status.ContainerStatuses, "pod %s", p.Name)
			assert.Contains(t, p.Status.ContainerStatuses[0].ImageID, pinnedDigest(second), "pod %s", p.Name)
		}
	}
}

// checkRevisionRunsBuild checks that the ready pods of revision rs run the image pinned
// (repository@digest): the kubelet reports its digest, and each container holds build's
// file and variable.
func checkRevisionRunsBuild(t *testing.T, ns, rs, pinned, build string) {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{
		LabelSelector: stagehandv1.RevisionLabel + "=" + strings.TrimPrefix(rs, "web-") + ",!" + stagehandv1.DeployerPodForLabel + ",!" + stagehandv1.HookStageLabel,
	})
	require.NoError(t, err)
	var ready int
	for i := range list.Items {
		p := &list.Items[i]
		if !framework.PodReady(p) {
			continue
		}
		ready++
		framework.LogContainers(t, p)
		assert.Equal(t, pinned, p.Spec.Containers[0].Image, "pod %s runs the digest, not the tag", p.Name)
		assert.Contains(t, p.Status.ContainerStatuses[0].ImageID, pinnedDigest(pinned), "pod %s: containerd pulled the pinned digest", p.Name)
		out := execIn(t, ns, p.Name, "app", "/bin/sh", "-c", "echo $"+buildEnv+" $(cat /"+buildFile+")")
		assert.Equal(t, build+" "+build, strings.TrimSpace(out), "pod %s: the build's variable and file", p.Name)
	}
	assert.Equal(t, 2, ready, "ready pods of %s", rs)
}

// pinnedDigest is the "@sha256:..." part of a pinned reference.
func pinnedDigest(pinned string) string { return pinned[strings.LastIndex(pinned, "@"):] }

// pulled is the image ref points to in the registry.
func pulled(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	require.NoError(t, err, "pulling %s", ref)
	return img
}

// pushBuild pushes base with one more layer, holding buildFile, and buildEnv in its
// config, both set to build, to the tag ref; it returns the pinned reference
// (repository@digest) that the tag now resolves to.
func pushBuild(t *testing.T, ref string, base v1.Image, build string) string {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: buildFile, Mode: 0o644, Size: int64(len(build)), Typeflag: tar.TypeReg}))
	_, err := tw.Write([]byte(build))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	require.NoError(t, err)
	img, err := mutate.AppendLayers(base, l)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cfg := cf.Config.DeepCopy()
	cfg.Env = append(cfg.Env, buildEnv+"="+build)
	img, err = mutate.Config(img, *cfg)
	require.NoError(t, err)

	tag, err := name.NewTag(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img, remote.WithContext(t.Context())), "pushing %s", ref)
	digest, err := img.Digest()
	require.NoError(t, err)
	return tag.Context().Name() + "@" + digest.String()
}
