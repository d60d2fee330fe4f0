package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/e2e/localcluster"
)

// The real-node suite (e2e/realnode, StartOptions.RealNode) runs Stagehand's pods as real
// containers: the controller stays on the node agent, and every DeploymentConfig of the
// suite puts its pods, and so its deployer and hook pods, on the real node (OnRealNode).
// The images are the ones make oci-images builds, pushed to the cluster's registry, which
// containerd pulls from.

// RealImageTag is the tag the suite builds its images with.
const RealImageTag = "dev"

// PushedImage is an image the suite built and pushed: its reference in the registry and
// its manifest digest.
type PushedImage struct {
	Ref    string
	Digest string
}

// imageBuilder is the image builder that make oci-images builds.
func imageBuilder(root string) string { return filepath.Join(root, "bin", "tools", "oci-images") }

// RealNodeMissing says why the real-node suite cannot run on this machine, or "" when it can.
func RealNodeMissing() string {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return err.Error()
	}
	if why := localcluster.RealNodeMissing(root); why != "" {
		return why
	}
	if _, err := os.Stat(imageBuilder(root)); err != nil {
		return "the image builder " + imageBuilder(root) + " is missing: run make oci-images"
	}
	return localcluster.RegistryMissing()
}

// pushImages builds the images (make oci-images' builder) and pushes them to the cluster's
// registry, prints their digests, and makes the controller's deployer image the pushed one.
func (e *Env) pushImages(ctx context.Context) error {
	reg := e.cluster.Registry()
	out, err := exec.CommandContext(ctx, imageBuilder(e.RepoRoot), "-bin", filepath.Join(e.RepoRoot, "bin"),
		"-out", filepath.Join(e.tmpDir, "oci-images"), "-tag", RealImageTag, "-registry", reg.Address).CombinedOutput()
	if err != nil {
		return fmt.Errorf("building and pushing the images: %w: %s", err, out)
	}
	e.realImages = map[string]PushedImage{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() { // "<repository>:<tag>  <digest>  <where>"
		f := strings.Fields(sc.Text())
		if len(f) == 3 && strings.HasPrefix(f[1], "sha256:") {
			e.realImages[strings.TrimSuffix(f[0], ":"+RealImageTag)] = PushedImage{Ref: f[2], Digest: f[1]}
		}
	}
	deployer, ok := e.realImages["stagehand/deployer"]
	if !ok {
		return fmt.Errorf("the image builder pushed no stagehand/deployer: %s", out)
	}
	fmt.Printf("real node: images pushed to %s:\n%s", reg.Address, out)
	e.controllerEnv = map[string]string{"STAGEHAND_DEPLOYER_IMAGE": deployer.Ref}
	return nil
}

// RealImage returns the pushed image of repository (e.g. "stagehand/testapp"); the test
// fails when the suite pushed none.
func (e *Env) RealImage(t *testing.T, repository string) PushedImage {
	t.Helper()
	img, ok := e.realImages[repository]
	require.True(t, ok, "the real-node suite pushed no %s (pushed: %v)", repository, e.realImages)
	return img
}

// OnRealNode makes spec's pods run on the real node: it selects the node and tolerates its
// taint. The deployer and hook pods of a DeploymentConfig copy both from its template.
func OnRealNode(spec *corev1.PodSpec) {
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[localcluster.RealNodeTaintKey] = "true"
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: localcluster.RealNodeTaintKey,
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}

// LogContainers logs where pod's containers ran: node, image, image digest and containerd's
// container ID, and fails the test unless they ran on the real node, from a pulled image.
func LogContainers(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	require.Equal(t, localcluster.RealNodeName, pod.Spec.NodeName, "pod %s", pod.Name)
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		t.Logf("pod %s container %s: image %s, imageID %s, containerID %s", pod.Name, st.Name, st.Image, st.ImageID, st.ContainerID)
		if st.ContainerID != "" {
			require.True(t, strings.HasPrefix(st.ContainerID, "containerd://"), "pod %s container %s: %s", pod.Name, st.Name, st.ContainerID)
			require.Contains(t, st.ImageID, "@sha256:", "pod %s container %s", pod.Name, st.Name)
		}
	}
}
