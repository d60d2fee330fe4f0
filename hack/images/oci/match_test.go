package oci

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/hack/images/dockerfile"
)

// node is one entry of an image's file system, read back from its layers.
type node struct {
	typ  byte
	mode int64
	link string
}

// readTar reads a tar stream into path -> node.
func readTar(r io.Reader) (map[string]node, error) {
	out := map[string]node{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the tar: %w", err)
		}
		out[path.Clean("/"+h.Name)] = node{typ: h.Typeflag, mode: h.Mode, link: h.Linkname}
	}
}

// imageFiles returns the whole file system of img (mutate.Extract) and that of the layers
// after the base's, which the final stage of the Dockerfile adds.
func imageFiles(t *testing.T, img v1.Image) (all, final map[string]node) {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	all, err := readTar(rc)
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	final = map[string]node{}
	for _, l := range layers[1:] {
		u, err := l.Uncompressed()
		require.NoError(t, err)
		files, err := readTar(u)
		require.NoError(t, err)
		for p, n := range files {
			final[p] = n
		}
	}
	return all, final
}

// resolve follows symlinks from p in files and returns the final node's path, or "" when
// the chain ends nowhere.
func resolve(files map[string]node, p string) string {
	for range 10 {
		n, ok := files[p]
		if !ok {
			return ""
		}
		if n.typ != tar.TypeSymlink {
			return p
		}
		if path.IsAbs(n.link) {
			p = path.Clean(n.link)
		} else {
			p = path.Join(path.Dir(p), n.link)
		}
	}
	return ""
}

// expectedConfig is the config a docker build of the final stage would give: the base's,
// changed by the stage's ENV, USER, WORKDIR, EXPOSE, ENTRYPOINT and CMD.
func expectedConfig(base v1.Config, fs dockerfile.FinalStage) v1.Config {
	img := Image{Base: Base{Config: base}, Env: fs.Env, User: fs.User, Entrypoint: fs.Entrypoint, ExposedPorts: fs.Expose}
	c := img.Config()
	if fs.WorkDir != "" {
		c.WorkingDir = fs.WorkDir
	}
	if fs.Cmd != nil {
		c.Cmd = fs.Cmd
	}
	return c
}

// mismatches compares an image built from spec with the final stage of its Dockerfile and
// returns one line for each way they disagree.
func mismatches(t *testing.T, spec Image, img v1.Image, fs dockerfile.FinalStage) []string {
	t.Helper()
	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if ref, err := name.ParseReference(fs.From); err != nil {
		report("base: FROM %q: %v", fs.From, err)
	} else if got := ref.Context().RepositoryStr() + ":" + ref.Identifier(); got != spec.Base.Ref {
		report("base: the Dockerfile is FROM %s, the image is built on a stand-in for %s", got, spec.Base.Ref)
	}

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	got, want := cf.Config, expectedConfig(spec.Base.Config, fs)
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"user", got.User, want.User},
		{"entrypoint", got.Entrypoint, want.Entrypoint},
		{"cmd", got.Cmd, want.Cmd},
		{"env", got.Env, want.Env},
		{"workdir", got.WorkingDir, want.WorkingDir},
		{"exposed ports", got.ExposedPorts, want.ExposedPorts},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			report("%s: the image has %v, the Dockerfile gives %v", f.name, f.got, f.want)
		}
	}
	if uid, _, _ := strings.Cut(got.User, ":"); uid == "0" || uid == "" || !isNumber(uid) {
		report("user: %q is not a numeric non-root user", got.User)
	}

	all, final := imageFiles(t, img)
	out = append(out, fileMismatches(all, final, fs, got.Entrypoint)...)
	return out
}

func isNumber(s string) bool { _, err := strconv.Atoi(s); return err == nil }

// fileMismatches checks the files of the final stage: the COPY destinations and the links
// of the RUN lines are there, nothing else is, links resolve, and the entrypoint runs.
func fileMismatches(all, final map[string]node, fs dockerfile.FinalStage, entrypoint []string) []string {
	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	wantFiles, wantLinks := map[string]bool{}, map[string]string{}
	for _, c := range fs.Copies {
		wantFiles[c.Dest] = true
	}
	for _, l := range fs.Links {
		wantLinks[l.Path] = l.Target
	}
	for p, n := range final {
		switch {
		case n.typ == tar.TypeReg && !wantFiles[p]:
			report("files: the image adds %s, which no COPY of the Dockerfile makes", p)
		case n.typ == tar.TypeSymlink && wantLinks[p] == "":
			report("links: the image adds %s -> %s, which no RUN of the Dockerfile makes", p, n.link)
		}
	}
	for p := range wantFiles {
		if n, ok := final[p]; !ok || n.typ != tar.TypeReg || n.mode&0o111 == 0 {
			report("files: the Dockerfile copies %s, which the image lacks (or not as an executable file)", p)
		}
	}
	for p, target := range wantLinks {
		if n, ok := final[p]; !ok || n.typ != tar.TypeSymlink || n.link != target {
			report("links: the Dockerfile links %s -> %s, the image has %+v", p, target, final[p])
		} else if resolve(all, p) == "" {
			report("links: %s -> %s leads nowhere in the image", p, target)
		}
	}
	for _, d := range fs.Dirs {
		if all[d].typ != tar.TypeDir {
			report("dirs: the Dockerfile makes %s, which the image lacks", d)
		}
	}
	if len(entrypoint) > 0 {
		if p := resolve(all, entrypoint[0]); p == "" || all[p].mode&0o111 == 0 {
			report("entrypoint: %s is not an executable file of the image", entrypoint[0])
		}
	}
	sort.Strings(out)
	return out
}
