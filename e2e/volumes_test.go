//go:build e2e

package e2e

// Volumes that outlive a pod: a clean-up pod started later on the same node (spec.nodeName
// set) must read what an application pod wrote, through a PersistentVolumeClaim or a
// hostPath. The commands use the mount path relative to their working directory, which
// works on the local cluster (the pod folder, where the mount is a link) and on a real
// node (busybox's WORKDIR is /); docs/localcluster.md says why.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestVolumesClaimIsSharedByPodsOnOneNode(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	// Given a hostPath PersistentVolume and a claim with no storage class, which the
	// controller manager's binder binds to it
	hostPath := "/stagehand-test/" + ns + "/claim"
	createHostPathVolume(t, ns, hostPath)
	createClaim(t, ns, "data", ns)
	waitForClaimBound(t, ns, "data")

	// When a pod writes into its mount and ends
	writer := shellPod("writer", "data", "echo written-by-the-writer > data/message")
	writer.Spec.Volumes = []corev1.Volume{claimVolume("data", "data")}
	createPod(t, ns, writer)
	written := env.WaitForPod(t, ns, "writer", podTimeout, "the writer to finish", framework.PodFinished)
	require.Equal(t, corev1.PodSucceeded, written.Status.Phase, "writer log:\n%s", podLog(t, ns, "writer"))

	// Then a pod started on the same node with the same claim reads it
	reader := shellPod("reader", "data", "cat data/message")
	reader.Spec.NodeName = written.Spec.NodeName
	reader.Spec.Volumes = []corev1.Volume{claimVolume("data", "data")}
	createPod(t, ns, reader)
	read := env.WaitForPod(t, ns, "reader", podTimeout, "the reader to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, read.Status.Phase)
	assert.Equal(t, "written-by-the-writer\n", podLog(t, ns, "reader"))

	// And on the local cluster the host's real path was never touched
	if env.Local() {
		assertHostPathUntouched(t, ns)
	}
}

func TestVolumesHostPathOutlivesThePod(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	volume := corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: "/stagehand-test/" + ns + "/hostpath",
		Type: ptr.To(corev1.HostPathDirectoryOrCreate),
	}}}
	// Given a pod that writes into a subPath of a hostPath volume and ends
	writer := shellPod("writer", "state", "echo kept-on-the-node > state/message")
	writer.Spec.Volumes = []corev1.Volume{volume}
	writer.Spec.Containers[0].VolumeMounts[0].SubPath = "run-1"
	createPod(t, ns, writer)
	written := env.WaitForPod(t, ns, "writer", podTimeout, "the writer to finish", framework.PodFinished)
	require.Equal(t, corev1.PodSucceeded, written.Status.Phase, "writer log:\n%s", podLog(t, ns, "writer"))

	// When the pod is deleted
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "writer", metav1.DeleteOptions{}))
	env.WaitForPod(t, ns, "writer", podTimeout, "the writer to be gone", func(p *corev1.Pod) bool { return p == nil })

	// Then a pod on the same node finds the file in the same hostPath
	reader := shellPod("reader", "state", "cat state/run-1/message")
	reader.Spec.NodeName = written.Spec.NodeName
	reader.Spec.Volumes = []corev1.Volume{volume}
	createPod(t, ns, reader)
	read := env.WaitForPod(t, ns, "reader", podTimeout, "the reader to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, read.Status.Phase)
	assert.Equal(t, "kept-on-the-node\n", podLog(t, ns, "reader"))
	if env.Local() {
		assertHostPathUntouched(t, ns)
	}
}

func TestVolumesPodWaitsForItsClaim(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	// Given a pod bound to a node whose claim does not exist yet
	pod := shellPod("early", "data", "echo started > data/message; cat data/message")
	pod.Spec.NodeName = nodes.Items[0].Name
	pod.Spec.Volumes = []corev1.Volume{claimVolume("data", "late")}
	createPod(t, ns, pod)

	// Then its container waits in ContainerCreating
	waiting := env.WaitForPod(t, ns, "early", podTimeout, "the container waiting for its volume", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	})
	assert.Equal(t, corev1.PodPending, waiting.Status.Phase)
	if env.Local() {
		// (a kubelet says it in a FailedMount event instead)
		assert.Contains(t, waiting.Status.ContainerStatuses[0].State.Waiting.Message, `persistentvolumeclaim "late" not found`)
	}

	// When the claim and its volume are created and bind
	createHostPathVolume(t, ns, "/stagehand-test/"+ns+"/late")
	createClaim(t, ns, "late", ns)
	waitForClaimBound(t, ns, "late")

	// Then the pod starts and succeeds
	done := env.WaitForPod(t, ns, "early", podTimeout, "the pod to finish", framework.PodFinished)
	assert.Equal(t, corev1.PodSucceeded, done.Status.Phase, "log:\n%s", podLog(t, ns, "early"))
	assert.Equal(t, "started\n", podLog(t, ns, "early"))
}

// shellPod is a pod that runs script in the shell image, with the volume named mount at
// /<mount>; the caller adds the volume.
func shellPod(name, mount, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "sh", Image: images.Shell, Command: []string{"/bin/sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: mount, MountPath: "/" + mount}},
			}},
		},
	}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

// createHostPathVolume creates a hostPath PersistentVolume labelled volume=<ns> (so that
// only this test's claims select it), and deletes it when the test ends.
func createHostPathVolume(t *testing.T, ns, path string) {
	t.Helper()
	pv, err := env.Kube.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ns + "-", Labels: map[string]string{"volume": ns}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate),
			}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating a PersistentVolume for %s", path)
	t.Cleanup(func() {
		if err := env.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting PersistentVolume %s: %v", pv.Name, err)
		}
	})
}

// createClaim creates a claim with no storage class for the volumes labelled volume=<label>.
func createClaim(t *testing.T, ns, name, label string) {
	t.Helper()
	_, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(""),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"volume": label}},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating claim %s", name)
}

func waitForClaimBound(t *testing.T, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		pvc, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound
	}, podTimeout, 200*time.Millisecond, "claim %s to be bound by the controller manager", name)
}

// assertHostPathUntouched checks that the local cluster kept the test's hostPath folders
// in its own folder, not at /stagehand-test on this machine.
func assertHostPathUntouched(t *testing.T, ns string) {
	t.Helper()
	_, err := os.Stat("/stagehand-test/" + ns)
	assert.True(t, os.IsNotExist(err), "the node agent must not write /stagehand-test/%s on the host (stat: %v)", ns, err)
}
