package oci

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file system object of a layer. Exactly one of Dir, Data and Link says what
// it is: a directory, a regular file with that content, or a symbolic link to that target.
type Entry struct {
	Path string // absolute, slash-separated
	Mode int64  // permission bits, with the sticky bit where it applies
	UID  int
	GID  int
	Dir  bool
	Data []byte
	Link string
}

// Tree is the content of one layer, keyed by path. Adding a path twice replaces it, as a
// later COPY or ln -sf would.
type Tree map[string]Entry

// Dir adds a directory owned by root.
func (t Tree) Dir(p string, mode int64) { t.add(Entry{Path: p, Mode: mode, Dir: true}) }

// File adds a regular file owned by root.
func (t Tree) File(p string, mode int64, data []byte) {
	t.add(Entry{Path: p, Mode: mode, Data: data})
}

// Symlink adds a symbolic link at p that points to target (relative or absolute).
func (t Tree) Symlink(p, target string) { t.add(Entry{Path: p, Mode: 0o777, Link: target}) }

func (t Tree) add(e Entry) {
	e.Path = path.Clean("/" + e.Path)
	t[e.Path] = e
}

// sorted returns the entries with the parent folders that were not added, in the order a
// tar wants them: each folder before what it holds. Missing parents are root's, 0755.
func (t Tree) sorted() []Entry {
	all := make(map[string]Entry, len(t))
	for p, e := range t {
		all[p] = e
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				if te, ok := t[d]; ok {
					all[d] = te
				} else {
					all[d] = Entry{Path: d, Mode: 0o755, Dir: true}
				}
			}
		}
	}
	out := make([]Entry, 0, len(all))
	for _, e := range all {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Tar writes the tree as an uncompressed tar, every entry with the modification time
// mtime, so that the same inputs give the same bytes.
func (t Tree) Tar(mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range t.sorted() {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.Path, "/"),
			Mode:    e.Mode,
			Uid:     e.UID,
			Gid:     e.GID,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		switch {
		case e.Dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case e.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing the tar header of %s: %w", e.Path, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("writing %s into the tar: %w", e.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the tar: %w", err)
	}
	return buf.Bytes(), nil
}

// Layer turns the tree into an OCI layer, gzip-compressed by go-containerregistry.
func (t Tree) Layer(mtime time.Time) (v1.Layer, error) {
	data, err := t.Tar(mtime)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making a layer of the tar: %w", err)
	}
	return layer, nil
}
