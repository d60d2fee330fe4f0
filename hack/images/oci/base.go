package oci

import (
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The base images that the Dockerfiles' final stages start FROM cannot be pulled here, so
// the builder lays out what the images need of them itself (docs/images.md).
const (
	// NonRoot is distroless's nonroot user and group, the numeric user of every image.
	NonRoot = 65532
	// defaultPath is the PATH of the distroless and busybox images.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	caFile      = "/etc/ssl/certs/ca-certificates.crt"
)

// Base is the stand-in for one base image.
type Base struct {
	// Name names the stand-in in the image's history.
	Name string
	// Ref is the repository and tag of the base image that a Dockerfile names FROM, as
	// go-containerregistry spells them, without the registry: a Dockerfile whose final
	// stage is FROM another base does not match this one.
	Ref string
	// Tree is the base's layer: users, /tmp, busybox, CA certificates.
	Tree Tree
	// Config is the base's own config, which a Dockerfile's ENV, USER and ENTRYPOINT change.
	Config v1.Config
}

// Busybox is busybox-static's binary with the names of its applets (busybox --list).
type Busybox struct {
	Binary  []byte
	Applets []string
}

// applets returns the applet names, sorted, without busybox itself and anything that is
// not a plain name.
func (b Busybox) applets() []string {
	var out []string
	for _, a := range b.Applets {
		if a != "" && a != "busybox" && !strings.ContainsAny(a, "/ ") {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// system adds what every base has: root, nobody and nonroot (65532) in /etc/passwd and
// /etc/group, their home folders, a world-writable /tmp, and the CA bundle when given.
func system(caCerts []byte) Tree {
	t := Tree{}
	t.File("/etc/passwd", 0o644, []byte(passwd))
	t.File("/etc/group", 0o644, []byte(group))
	t.Dir("/tmp", 0o1777)
	t.Dir("/root", 0o700)
	t.add(Entry{Path: "/home/nonroot", Mode: 0o700, UID: NonRoot, GID: NonRoot, Dir: true})
	if len(caCerts) > 0 {
		t.File(caFile, 0o644, caCerts)
	}
	return t
}

// DistrolessStatic stands for distroless static-debian12:nonroot: no shell, user 65532.
func DistrolessStatic(caCerts []byte) Base {
	return Base{
		Name: "distroless-static-nonroot",
		Ref:  "distroless/static-debian12:nonroot",
		Tree: system(caCerts),
		Config: v1.Config{
			Env:        []string{"PATH=" + defaultPath, "SSL_CERT_FILE=" + caFile},
			User:       "65532",
			WorkingDir: "/home/nonroot",
		},
	}
}

// DistrolessDebug stands for distroless static-debian12:debug-nonroot: the same, plus
// busybox in /busybox with a link there for each applet, and /busybox last on PATH.
func DistrolessDebug(caCerts []byte, bb Busybox) Base {
	b := DistrolessStatic(caCerts)
	b.Name, b.Ref = "distroless-static-debug-nonroot", "distroless/static-debian12:debug-nonroot"
	b.Tree.File("/busybox/busybox", 0o755, bb.Binary)
	for _, a := range bb.applets() {
		b.Tree.Symlink("/busybox/"+a, "busybox")
	}
	b.Config.Env[0] = "PATH=" + defaultPath + ":/busybox"
	b.Config.Entrypoint = []string{"/busybox/sh"}
	return b
}

// BusyboxImage stands for busybox:1.36: every applet in /bin. The binary itself lives at
// /busybox/busybox, as in the debug base, and the /bin links point there. It runs as root,
// like the original; the images built on it set their own user.
func BusyboxImage(caCerts []byte, bb Busybox) Base {
	t := system(caCerts)
	t.File("/busybox/busybox", 0o755, bb.Binary)
	for _, a := range bb.applets() {
		t.Symlink("/bin/"+a, "/busybox/busybox")
	}
	return Base{
		Name:   "busybox",
		Ref:    "library/busybox:1.36",
		Tree:   t,
		Config: v1.Config{Env: []string{"PATH=" + defaultPath}, Cmd: []string{"sh"}},
	}
}
