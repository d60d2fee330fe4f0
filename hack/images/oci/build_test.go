package oci

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteLayoutAndPush writes the images into an OCI layout and pushes them to an
// in-process registry over plain HTTP; both give back the digests that were built.
func TestWriteLayoutAndPush(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	var built []Built
	for _, spec := range testImages(t) {
		built = append(built, Built{Ref: spec.Repository + ":test", Image: build(t, spec)})
	}
	dir := filepath.Join(t.TempDir(), "oci")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "stale"), 0o755))
	require.NoError(t, WriteLayout(dir, built))
	assert.NoDirExists(t, filepath.Join(dir, "stale"), "the layout is written anew")
	idx, err := layout.ImageIndexFromPath(dir)
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, len(built))

	for i, b := range built {
		want, err := b.Image.Digest()
		require.NoError(t, err)
		assert.Equal(t, want, m.Manifests[i].Digest, b.Ref)
		assert.Equal(t, b.Ref, m.Manifests[i].Annotations["org.opencontainers.image.ref.name"])

		pushed, err := Push(addr, b)
		require.NoError(t, err)
		ref, err := name.ParseReference(pushed, name.Insecure)
		require.NoError(t, err)
		desc, err := remote.Head(ref)
		require.NoError(t, err)
		assert.Equal(t, want, desc.Digest, pushed)
	}
}

func TestCheckStatic(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755))
	assert.ErrorContains(t, CheckStatic(notELF), "ELF")
	// A dynamically linked program that every Debian has.
	if _, err := os.Stat("/bin/ls"); err == nil {
		assert.ErrorContains(t, CheckStatic("/bin/ls"), "dynamically linked")
	}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		assert.NoError(t, CheckStatic("/bin/busybox"), "busybox-static (hack/install-busybox.sh)")
	}
}
