package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where a volume's data lives. No volume is ever a real host path:
//
//   - hostPath, and a PersistentVolume of type hostPath or local:
//     <Config.Dir>/host/<node>/<path>, one tree per node as a real node has one
//     filesystem. Pods on the same node share it, and it outlives them. ".." cannot climb
//     out of it. The folder is created when missing, except for hostPath type Directory
//     or File, which must exist (as on a kubelet; the type checks run on the mapped path).
//     Socket, CharDevice and BlockDevice are not supported.
//   - A PersistentVolumeClaim, or a generic ephemeral volume (its claim is <pod>-<volume>):
//     the folder of the PersistentVolume it is bound to. While the claim is missing or not
//     Bound, or its volume is of another type, the pod's containers wait in
//     ContainerCreating with a message that says why, and start once it is fixed.
//   - emptyDir (any medium): <poddir>/volumes/<name>, removed when the pod is gone.
//   - configMap, secret, downwardAPI and projected volumes: an empty folder
//     <poddir>/volumes/<name>; their keys are not written (read them through env or the
//     API). A projected volume with a serviceAccountToken source (the one ServiceAccount
//     admission adds) is <poddir>/serviceaccount, with token, ca.crt and namespace.
//   - Any other type: the pod waits with a message that the type is not supported.
const (
	volumesDirName = "volumes"
	hostDirName    = "host"
)

// volumeError is a volume that cannot be set up yet; the container waits in
// ContainerCreating with its message.
type volumeError struct{ volume, msg string }

func (e *volumeError) Error() string {
	return fmt.Sprintf("volume %q: %s", e.volume, e.msg)
}

// hostFolder maps a path on the node's filesystem to the agent's folder for that node.
// Cleaning "/"+path drops every ".." that would climb above the root.
func hostFolder(agentDir, node, path string) string {
	return filepath.Join(agentDir, hostDirName, node, filepath.Clean("/"+path))
}

// volumeFolders returns the folder behind every volume of the pod, creating them. The
// folders of a pod do not change (a bound claim keeps its volume), so they are resolved
// once, and an error leaves the pod to try again.
func (w *podWorker) volumeFolders(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	w.volMu.Lock()
	defer w.volMu.Unlock()
	if w.folders != nil {
		return w.folders, nil
	}
	folders := make(map[string]string, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir, err := w.volumeFolder(ctx, pod, v)
		if err != nil {
			return nil, err
		}
		folders[v.Name] = dir
	}
	w.folders = folders
	return folders, nil
}

func (w *podWorker) volumeFolder(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	private := filepath.Join(w.dir, volumesDirName, v.Name)
	switch {
	case v.HostPath != nil:
		return w.hostPathFolder(pod.Spec.NodeName, v.Name, v.HostPath.Path, v.HostPath.Type)
	case v.PersistentVolumeClaim != nil:
		return w.claimFolder(ctx, pod, v.Name, v.PersistentVolumeClaim.ClaimName, false)
	case v.Ephemeral != nil:
		return w.claimFolder(ctx, pod, v.Name, pod.Name+"-"+v.Name, true)
	case v.Projected != nil && hasTokenSource(v.Projected):
		return filepath.Join(w.dir, serviceAccountDirName), mkdir(v.Name, filepath.Join(w.dir, serviceAccountDirName))
	case v.EmptyDir != nil, v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		return private, mkdir(v.Name, private)
	}
	return "", &volumeError{volume: v.Name, msg: "this volume type is not supported by the local cluster's node agent (hostPath, persistentVolumeClaim, ephemeral, emptyDir, configMap, secret, downwardAPI and projected are)"}
}

func hasTokenSource(p *corev1.ProjectedVolumeSource) bool {
	for _, src := range p.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func mkdir(volume, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &volumeError{volume: volume, msg: fmt.Sprintf("creating %s: %v", dir, err)}
	}
	return nil
}

// claimFolder is the folder of the PersistentVolume that claim is bound to. An ephemeral
// volume's claim must be owned by the pod, as the kubelet checks.
func (w *podWorker) claimFolder(ctx context.Context, pod *corev1.Pod, volume, claim string, ephemeral bool) (string, error) {
	pvc, err := w.a.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("persistentvolumeclaim %q not found", claim)}
	}
	if err != nil {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("reading persistentvolumeclaim %q: %v", claim, err)}
	}
	if ephemeral && !metav1.IsControlledBy(pvc, pod) {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("persistentvolumeclaim %q was not created for this pod (the pod is not its owner)", claim)}
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("persistentvolumeclaim %q is not bound yet (phase %s)", claim, pvc.Status.Phase)}
	}
	pv, err := w.a.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("reading persistentvolume %q of claim %q: %v", pvc.Spec.VolumeName, claim, err)}
	}
	switch {
	case pv.Spec.HostPath != nil:
		return w.hostPathFolder(pod.Spec.NodeName, volume, pv.Spec.HostPath.Path, pv.Spec.HostPath.Type)
	case pv.Spec.Local != nil:
		return w.hostPathFolder(pod.Spec.NodeName, volume, pv.Spec.Local.Path, nil)
	}
	return "", &volumeError{volume: volume, msg: fmt.Sprintf("persistentvolume %q of claim %q is of a type the local cluster's node agent does not support (only hostPath and local are)", pv.Name, claim)}
}

// hostPathFolder maps a hostPath of node to the agent's folder and applies the hostPath
// type: create what the type allows to create, check what must exist.
func (w *podWorker) hostPathFolder(node, volume, path string, typ *corev1.HostPathType) (string, error) {
	dir := hostFolder(w.a.cfg.Dir, node, path)
	t := corev1.HostPathUnset
	if typ != nil {
		t = *typ
	}
	fi, err := os.Stat(dir)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return "", &volumeError{volume: volume, msg: fmt.Sprintf("hostPath %s: %v", path, err)}
	}
	check := func(ok bool, what string) (string, error) {
		if !ok {
			return "", &volumeError{volume: volume, msg: fmt.Sprintf("hostPath type check failed: %s is not %s (it is %s on the local cluster)", path, what, dir)}
		}
		return dir, nil
	}
	switch t {
	case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate:
		if missing {
			return dir, mkdir(volume, dir)
		}
		return dir, nil
	case corev1.HostPathFileOrCreate:
		if !missing {
			return check(!fi.IsDir(), "a file")
		}
		if err := mkdir(volume, filepath.Dir(dir)); err != nil {
			return "", err
		}
		if err := os.WriteFile(dir, nil, 0o644); err != nil {
			return "", &volumeError{volume: volume, msg: fmt.Sprintf("creating %s: %v", dir, err)}
		}
		return dir, nil
	case corev1.HostPathDirectory:
		return check(!missing && fi.IsDir(), "a directory")
	case corev1.HostPathFile:
		return check(!missing && fi.Mode().IsRegular(), "a file")
	}
	return "", &volumeError{volume: volume, msg: fmt.Sprintf("hostPath type %s is not supported by the local cluster's node agent", t)}
}

// removePrivateVolumes deletes <poddir>/volumes (emptyDir and the other pod-private
// folders) once the pod is gone. The pod folder itself stays, with the logs. Folders of
// hostPath and claims are elsewhere and stay.
func (w *podWorker) removePrivateVolumes() {
	if err := os.RemoveAll(filepath.Join(w.dir, volumesDirName)); err != nil {
		w.log.WithError(err).Warn("removing the pod's emptyDir volumes")
	}
}
