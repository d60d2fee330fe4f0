package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestHostFolderStaysInTheNodesFolder(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{name: "absolute", path: "/stagehand-test/abc", want: "/agent/host/node-1/stagehand-test/abc"},
		{name: "relative", path: "data", want: "/agent/host/node-1/data"},
		{name: "root", path: "/", want: "/agent/host/node-1"},
		{name: "dot-dot above the root", path: "/../../etc/passwd", want: "/agent/host/node-1/etc/passwd"},
		{name: "dot-dot inside", path: "/a/b/../../../c", want: "/agent/host/node-1/c"},
		{name: "relative dot-dot", path: "../../x", want: "/agent/host/node-1/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hostFolder("/agent", "node-1", tt.path)
			assert.Equal(t, tt.want, got)
			assert.True(t, strings.HasPrefix(got, "/agent/host/node-1"), "%s left the node's folder", got)
		})
	}
}

func TestMountLinkPath(t *testing.T) {
	reserved := []string{"bin", "app", "app.log"}
	tests := []struct {
		name, mountPath, want, wantErr string
	}{
		{name: "top level", mountPath: "/data", want: "/pod/data"},
		{name: "nested", mountPath: "/var/lib/app", want: "/pod/var/lib/app"},
		{name: "trailing slash", mountPath: "/data/", want: "/pod/data"},
		{name: "dot-dot cannot leave the pod folder", mountPath: "/../../etc", want: "/pod/etc"},
		{name: "root", mountPath: "/", wantErr: "is the root"},
		{name: "dot-dot to the root", mountPath: "/data/..", wantErr: "is the root"},
		{name: "the agent's bin folder", mountPath: "/bin", wantErr: "bin in the pod folder is the node agent's own"},
		{name: "inside a container's folder", mountPath: "/app/config", wantErr: "app in the pod folder"},
		{name: "a name that only starts like a reserved one", mountPath: "/binaries", want: "/pod/binaries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mountLinkPath("/pod", tt.mountPath, reserved)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSubPathTarget(t *testing.T) {
	vol := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(vol, "file"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "escape")))
	require.NoError(t, os.Symlink("file", filepath.Join(vol, "inside")))
	tests := []struct {
		name, subPath, want, wantErr string
	}{
		{name: "none", subPath: "", want: vol},
		{name: "missing folder is created", subPath: "a/b", want: filepath.Join(vol, "a/b")},
		{name: "existing file", subPath: "file", want: filepath.Join(vol, "file")},
		{name: "symlink inside the volume", subPath: "inside", want: filepath.Join(vol, "inside")},
		{name: "dot-dot", subPath: "../x", wantErr: "must not contain"},
		{name: "dot-dot in the middle", subPath: "a/../../x", wantErr: "must not contain"},
		{name: "absolute", subPath: "/etc", wantErr: "must be relative"},
		{name: "symlink out of the volume", subPath: "escape", wantErr: "leads out of its volume"},
		{name: "through a symlink out of the volume", subPath: "escape/sub", wantErr: "leads out of its volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := subPathTarget(vol, tt.subPath)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				entries, _ := os.ReadDir(outside)
				assert.Empty(t, entries, "nothing may be created outside the volume")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			_, err = os.Stat(got)
			assert.NoError(t, err, "the target exists")
		})
	}
}

func TestEnsureLink(t *testing.T) {
	pod := t.TempDir()
	vol := t.TempDir()
	other := t.TempDir()
	link := filepath.Join(pod, "var", "lib", "data")

	// Given no link, then it is created with its parent folders, and a file written
	// through it lands in the volume
	require.NoError(t, ensureLink(link, vol))
	require.NoError(t, os.WriteFile(filepath.Join(link, "f"), []byte("hi"), 0o644))
	got, err := os.ReadFile(filepath.Join(vol, "f"))
	require.NoError(t, err)
	assert.Equal(t, "hi", string(got))

	// Given the same link again (a restart, another container mounting the same volume),
	// then it is kept
	assert.NoError(t, ensureLink(link, vol))

	// Given another target at the same path, then it is refused and the link is unchanged
	err = ensureLink(link, other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already links to")
	cur, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, vol, cur)

	// Given a real file or folder at the path, then it is refused
	require.NoError(t, os.Mkdir(filepath.Join(pod, "real"), 0o755))
	err = ensureLink(filepath.Join(pod, "real"), vol)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a volume link")
}

func TestPlanMounts(t *testing.T) {
	podDir := t.TempDir()
	data := t.TempDir()
	cache := t.TempDir()
	folders := map[string]string{"data": data, "cache": cache}
	spec := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "cache", MountPath: "/data/cache"},
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(POD)"},
		{Name: "data", MountPath: "/config", SubPath: "conf", ReadOnly: true},
	}}
	expand := func(s string) string {
		return expandVars(s, func(n string) (string, bool) { return map[string]string{"POD": "web-1"}[n], n == "POD" })
	}
	mounts, err := planMounts(podDir, []string{"app"}, spec, folders, expand)
	require.NoError(t, err)
	assert.Equal(t, []mount{
		{link: filepath.Join(podDir, "data"), target: data},
		{link: filepath.Join(podDir, "logs"), target: filepath.Join(data, "logs/web-1")},
		{link: filepath.Join(podDir, "config"), target: filepath.Join(data, "conf")},
		{link: filepath.Join(podDir, "data/cache"), target: cache},
	}, mounts, "outer mounts first; subPath and subPathExpr honoured")

	_, err = planMounts(podDir, nil, &corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}}, folders, expand)
	assert.ErrorContains(t, err, "names no volume")
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	w := &podWorker{a: &Agent{cfg: Config{Dir: dir}}, dir: filepath.Join(dir, "pods", "p")}
	typ := func(t corev1.HostPathType) *corev1.HostPathType { return &t }
	tests := []struct {
		name, path string
		typ        *corev1.HostPathType
		wantErr    string
		wantDir    bool
	}{
		{name: "unset creates a folder", path: "/unset", wantDir: true},
		{name: "DirectoryOrCreate", path: "/a/b", typ: typ(corev1.HostPathDirectoryOrCreate), wantDir: true},
		{name: "Directory must exist", path: "/missing", typ: typ(corev1.HostPathDirectory), wantErr: "hostPath type check failed: /missing is not a directory"},
		{name: "Directory that exists", path: "/a/b", typ: typ(corev1.HostPathDirectory), wantDir: true},
		{name: "FileOrCreate", path: "/f/file", typ: typ(corev1.HostPathFileOrCreate)},
		{name: "File that exists", path: "/f/file", typ: typ(corev1.HostPathFile)},
		{name: "File that is a folder", path: "/a", typ: typ(corev1.HostPathFile), wantErr: "is not a file"},
		{name: "Socket", path: "/s", typ: typ(corev1.HostPathSocket), wantErr: "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.hostPathFolder("node-1", "v", tt.path, tt.typ)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, "host", "node-1", tt.path), got)
			fi, err := os.Stat(got)
			require.NoError(t, err)
			assert.Equal(t, tt.wantDir, fi.IsDir())
		})
	}
}

func TestClaimFolders(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	claim := func(name, volume string, phase corev1.PersistentVolumeClaimPhase, owned bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
		if owned {
			c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}
		}
		return c
	}
	pv := func(name string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src}}
	}
	client := fake.NewClientset(
		claim("bound-hostpath", "pv-hostpath", corev1.ClaimBound, false),
		claim("bound-local", "pv-local", corev1.ClaimBound, false),
		claim("bound-nfs", "pv-nfs", corev1.ClaimBound, false),
		claim("pending", "", corev1.ClaimPending, false),
		claim("p-scratch", "pv-hostpath", corev1.ClaimBound, true),
		claim("p-stolen", "pv-hostpath", corev1.ClaimBound, false),
		pv("pv-hostpath", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/stagehand-test/one"}}),
		pv("pv-local", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/../disk1"}}),
		pv("pv-nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}}),
	)
	w := &podWorker{a: &Agent{cfg: Config{Dir: dir}, client: client}, dir: filepath.Join(dir, "pods", "p")}
	pvcVolume := func(claim string) corev1.VolumeSource {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	}
	ephemeral := corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
	tests := []struct {
		name    string
		volume  corev1.Volume
		want    string
		wantErr string
	}{
		{name: "hostPath volume", volume: corev1.Volume{Name: "v", VolumeSource: pvcVolume("bound-hostpath")}, want: "host/node-1/stagehand-test/one"},
		{name: "local volume", volume: corev1.Volume{Name: "v", VolumeSource: pvcVolume("bound-local")}, want: "host/node-1/mnt/disk1"},
		{name: "ephemeral volume owned by the pod", volume: corev1.Volume{Name: "scratch", VolumeSource: ephemeral}, want: "host/node-1/stagehand-test/one"},
		{name: "missing claim", volume: corev1.Volume{Name: "v", VolumeSource: pvcVolume("nope")}, wantErr: `volume "v": persistentvolumeclaim "nope" not found`},
		{name: "claim not bound", volume: corev1.Volume{Name: "v", VolumeSource: pvcVolume("pending")}, wantErr: `persistentvolumeclaim "pending" is not bound yet (phase Pending)`},
		{name: "unsupported volume type", volume: corev1.Volume{Name: "v", VolumeSource: pvcVolume("bound-nfs")}, wantErr: `persistentvolume "pv-nfs" of claim "bound-nfs" is of a type the local cluster's node agent does not support`},
		{name: "ephemeral claim of someone else", volume: corev1.Volume{Name: "stolen", VolumeSource: ephemeral}, wantErr: "was not created for this pod"},
		{name: "emptyDir", volume: corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, want: "pods/p/volumes/tmp"},
		{name: "configMap", volume: corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}, want: "pods/p/volumes/cm"},
		{name: "service-account token", volume: corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
		}}}, want: "pods/p/serviceaccount"},
		{name: "inline nfs", volume: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}}, wantErr: "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.volumeFolder(context.Background(), pod, &tt.volume)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				var ve *volumeError
				assert.ErrorAs(t, err, &ve, "a volume error makes the container wait in ContainerCreating")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, tt.want), got)
			fi, err := os.Stat(got)
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
		})
	}
}

func TestWorkingDirFollowsAMountLink(t *testing.T) {
	podDir := t.TempDir()
	vol := t.TempDir()
	require.NoError(t, ensureLink(filepath.Join(podDir, "data"), vol))
	w := &podWorker{dir: podDir}
	tests := []struct {
		name, workingDir, want string
	}{
		{name: "none", workingDir: "", want: podDir},
		{name: "an existing host folder wins", workingDir: vol, want: vol},
		{name: "a mount path", workingDir: "/data", want: filepath.Join(podDir, "data")},
		{name: "neither", workingDir: "/no/such/folder", want: podDir},
		{name: "relative", workingDir: "data", want: podDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, w.workingDir(&corev1.Container{WorkingDir: tt.workingDir}))
		})
	}
}
