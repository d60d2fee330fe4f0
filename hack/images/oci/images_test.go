package oci

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/hack/images/dockerfile"
)

// repoRoot is the repository root, seen from this package's folder.
const repoRoot = "../../.."

// testInputs are stand-ins for the binaries and busybox: the layout and config of the images
// do not depend on what the files hold.
func testInputs() Inputs {
	in := Inputs{Binaries: map[string][]byte{}, CACerts: []byte("certs\n")}
	for _, n := range BinaryNames {
		in.Binaries[n] = []byte("binary " + n)
	}
	in.Busybox = Busybox{Binary: []byte("busybox"), Applets: []string{"sh", "ls", "id", "sleep", "cat"}}
	return in
}

func testImages(t *testing.T) map[string]Image {
	t.Helper()
	images, err := Images(testInputs())
	require.NoError(t, err)
	out := map[string]Image{}
	for _, img := range images {
		out[img.Repository] = img
	}
	return out
}

func build(t *testing.T, spec Image) v1.Image {
	t.Helper()
	img, err := Build(spec, time.Unix(0, 0).UTC())
	require.NoError(t, err)
	return img
}

func readDockerfile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	require.NoError(t, err)
	return data
}

// TestImagesMatchDockerfiles builds each image that has a Dockerfile and compares it with the
// final stage of that Dockerfile, as BuildKit's parser reads it: base, user, entrypoint,
// env, ports, copied files and the links of its RUN lines.
func TestImagesMatchDockerfiles(t *testing.T) {
	seen := 0
	for _, spec := range testImages(t) {
		if spec.Dockerfile == "" {
			continue
		}
		seen++
		t.Run(spec.Repository, func(t *testing.T) {
			fs, err := dockerfile.ReadBytes(readDockerfile(t, spec.Dockerfile))
			require.NoError(t, err)
			assert.Empty(t, mismatches(t, spec, build(t, spec), fs))
		})
	}
	assert.Equal(t, 4, seen, "the four images of docs/images.md")
}

// TestMismatchesAreReported breaks the deployer's Dockerfile, or its image, in each way the
// check must notice, and requires the check to name it.
func TestMismatchesAreReported(t *testing.T) {
	spec := testImages(t)["stagehand/deployer"]
	text := string(readDockerfile(t, spec.Dockerfile))
	good := build(t, spec)
	extraLink := Tree{}
	extraLink.Symlink("/usr/bin/env", "/busybox/env")
	withLink, err := extraLink.Layer(time.Unix(0, 0))
	require.NoError(t, err)
	cases := []struct {
		name    string
		edit    func(string) string
		image   func(v1.Image) (v1.Image, error)
		reports string
	}{
		{name: "root user", reports: "user:",
			edit: func(s string) string { return strings.Replace(s, "USER 65532:65532", "USER 0:0", 1) }},
		{name: "another entrypoint", reports: "entrypoint:",
			edit: func(s string) string {
				return strings.Replace(s, `["/usr/local/bin/stagehand-deployer"]`, `["/busybox/sh"]`, 1)
			}},
		{name: "another PATH", reports: "env:",
			edit: func(s string) string { return strings.Replace(s, "PATH=/usr/local/bin:", "PATH=", 1) }},
		{name: "a link less", reports: "links: the image adds /usr/local/bin/openshift-deploy",
			edit: func(s string) string {
				return strings.Replace(s, " && ln -sf stagehand-deployer /usr/local/bin/openshift-deploy", "", 1)
			}},
		{name: "a link to elsewhere", reports: "links: the Dockerfile links /bin/sh -> /busybox/ash",
			edit: func(s string) string {
				return strings.Replace(s, "ln -sf /busybox/sh /bin/sh", "ln -sf /busybox/ash /bin/sh", 1)
			}},
		{name: "another base", reports: "base:",
			edit: func(s string) string { return strings.Replace(s, ":debug-nonroot", ":nonroot", 1) }},
		{name: "an image with another user", reports: "user:",
			image: func(i v1.Image) (v1.Image, error) {
				cf, err := i.ConfigFile()
				if err != nil {
					return nil, err
				}
				c := cf.Config
				c.User = "0"
				return mutate.Config(i, c)
			}},
		{name: "an image with a link more", reports: "links: the image adds /usr/bin/env",
			image: func(i v1.Image) (v1.Image, error) { return mutate.AppendLayers(i, withLink) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			df, img := text, good
			if tc.edit != nil {
				df = tc.edit(text)
				require.NotEqual(t, text, df, "the edit must change the Dockerfile")
			}
			if tc.image != nil {
				img, err = tc.image(good)
				require.NoError(t, err)
			}
			fs, err := dockerfile.ReadBytes([]byte(df))
			require.NoError(t, err)
			got := mismatches(t, spec, img, fs)
			assert.NotEmpty(t, got)
			assert.Contains(t, strings.Join(got, "\n"), tc.reports)
		})
	}
}

// TestShellImage checks the hook image, which has no Dockerfile: a numeric non-root user,
// /bin/sh that resolves to busybox, the nonroot user in /etc/passwd and a /tmp for all.
func TestShellImage(t *testing.T) {
	img := build(t, testImages(t)["stagehand/shell"])
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	all, _ := imageFiles(t, img)
	assert.Equal(t, "/busybox/busybox", resolve(all, "/bin/sh"))
	assert.Equal(t, int64(0o1777), all["/tmp"].mode)
	assert.Equal(t, byte(tar.TypeReg), all["/etc/passwd"].typ)
}

// TestPauseImage checks the real node's sandbox image: root, and an entrypoint that sleeps
// through busybox.
func TestPauseImage(t *testing.T) {
	img := build(t, testImages(t)["stagehand/pause"])
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Empty(t, cf.Config.User)
	assert.Equal(t, []string{"/bin/sleep", "2147483647"}, cf.Config.Entrypoint)
	assert.Empty(t, cf.Config.Cmd)
	all, _ := imageFiles(t, img)
	assert.Equal(t, "/busybox/busybox", resolve(all, "/bin/sleep"))
}

// TestBuildIsReproducible builds every image twice: the same inputs give the same digest.
func TestBuildIsReproducible(t *testing.T) {
	for _, spec := range testImages(t) {
		a, err := build(t, spec).Digest()
		require.NoError(t, err)
		b, err := build(t, spec).Digest()
		require.NoError(t, err)
		assert.Equal(t, a, b, spec.Repository)
	}
}
