package nodeagent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// How a container sees its volumes. A container is a host process without a mount
// namespace, so a volume cannot appear at its absolute mountPath without touching the
// host. Instead, a volumeMount at /data is a symlink <poddir>/data -> the volume's folder
// (subPath honoured), and the process runs in <poddir>. A command that uses the mount
// path relative to its working directory (`echo hi > data/file`) therefore works both
// here and on a real node whose image's WORKDIR is /. Absolute paths are not remapped:
// /data is the host's /data. A workingDir that is not an existing host folder but names a
// mount (workingDir /data, mountPath /data) runs the process in the link, so relative
// paths land in the volume there too.
//
// The containers of a pod share <poddir>, so two containers of one pod cannot mount
// different volumes (or subPaths) at the same path; the second one waits with a message
// saying so. A mount path whose first element is one of the agent's own files in
// <poddir> (bin, serviceaccount, volumes, kubeconfig.yaml, a container's folder or log)
// cannot be linked either. readOnly is not enforced: the process can write.

// mount is one volumeMount of a container, resolved: link is where the container sees it,
// target what the link points at.
type mount struct {
	link, target string
}

// mountLinkPath is where a container sees a volume mounted at mountPath: the same path
// under the pod folder. Cleaning "/"+mountPath drops every ".." that would climb above the
// pod folder. reserved are the names of the agent's own files in the pod folder.
func mountLinkPath(podDir, mountPath string, reserved []string) (string, error) {
	rel := strings.TrimPrefix(filepath.Clean("/"+mountPath), "/")
	if rel == "" {
		return "", fmt.Errorf("mountPath %q is the root; the local cluster cannot show a volume there", mountPath)
	}
	first, _, _ := strings.Cut(rel, "/")
	if slices.Contains(reserved, first) {
		return "", fmt.Errorf("mountPath %q: %s in the pod folder is the node agent's own; use another mountPath on the local cluster", mountPath, first)
	}
	return filepath.Join(podDir, rel), nil
}

// reservedNames are the names in the pod folder that the agent writes itself.
func reservedNames(pod *corev1.Pod) []string {
	names := []string{binDirName, serviceAccountDirName, volumesDirName, kubeconfigFile}
	add := func(c corev1.Container) { names = append(names, c.Name, c.Name+".log", c.Name+".previous.log") }
	for _, c := range pod.Spec.InitContainers {
		add(c)
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
	return names
}

// subPathTarget is the file or folder subPath names inside the volume folder volDir. A
// missing subPath becomes a folder, as on a kubelet. subPath must be relative and must not
// climb out with ".." (the API refuses both too), and it must not leave the volume
// through a symlink, which a pod could plant in a shared hostPath folder.
func subPathTarget(volDir, subPath string) (string, error) {
	if subPath == "" {
		return volDir, nil
	}
	if filepath.IsAbs(subPath) || slices.Contains(strings.Split(filepath.ToSlash(subPath), "/"), "..") {
		return "", fmt.Errorf("subPath %q must be relative and must not contain \"..\"", subPath)
	}
	root, err := filepath.EvalSymlinks(volDir)
	if err != nil {
		return "", fmt.Errorf("resolving the volume folder: %w", err)
	}
	inside := func(path string) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("resolving subPath %q: %w", subPath, err)
		}
		if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return fmt.Errorf("subPath %q leads out of its volume (to %s)", subPath, real)
		}
		return nil
	}
	target := filepath.Join(volDir, subPath)
	// Check the deepest part that exists before creating the rest, so that nothing is
	// created through a symlink that leads out.
	existing := target
	for existing != volDir {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		existing = filepath.Dir(existing)
	}
	if err := inside(existing); err != nil {
		return "", err
	}
	if existing != target {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return "", fmt.Errorf("creating subPath %q: %w", subPath, err)
		}
	}
	if err := inside(target); err != nil {
		return "", err
	}
	return target, nil
}

// ensureLink makes link a symlink to target, creating its parent folders. A link that
// already points at target is kept; anything else at link is an error, so that one mount
// never silently replaces another.
func ensureLink(link, target string) error {
	if fi, err := os.Lstat(link); err == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return fmt.Errorf("%s already exists and is not a volume link", link)
		}
		cur, err := os.Readlink(link)
		if err != nil {
			return fmt.Errorf("reading link %s: %w", link, err)
		}
		if cur != target {
			return fmt.Errorf("%s already links to %s; the containers of a pod share one folder on the local cluster, so two mounts at one path must be the same volume and subPath", link, cur)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return fmt.Errorf("creating the folder of mount link %s: %w", link, err)
	}
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("creating mount link %s: %w", link, err)
	}
	return nil
}

// planMounts resolves the volumeMounts of container spec against the pod's volume folders
// (by volume name). expand expands $(VAR) in subPathExpr with the container's environment.
func planMounts(podDir string, reserved []string, spec *corev1.Container, folders map[string]string, expand func(string) string) ([]mount, error) {
	var mounts []mount
	for _, vm := range spec.VolumeMounts {
		dir, ok := folders[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q names no volume of the pod", vm.Name)
		}
		link, err := mountLinkPath(podDir, vm.MountPath, reserved)
		if err != nil {
			return nil, err
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr)
		}
		target, err := subPathTarget(dir, sub)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
		}
		mounts = append(mounts, mount{link: link, target: target})
	}
	// Outer mounts first, so that a nested one (/data/cache in /data) is linked inside the
	// outer volume, as a kubelet mounts it there.
	slices.SortStableFunc(mounts, func(a, b mount) int { return len(a.link) - len(b.link) })
	return mounts, nil
}
