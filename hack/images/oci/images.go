package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is one image to build: a base, and the layer and config changes of the final stage
// of its Dockerfile.
type Image struct {
	// Repository is the image's name without registry and tag: stagehand/deployer.
	Repository string
	// Dockerfile is the Dockerfile it reproduces, relative to the repository root; empty
	// for the shell image, which has none.
	Dockerfile string
	Base       Base
	// Layer holds what the final stage adds: its COPY --from=build and the links its RUN
	// lines make.
	Layer Tree
	// Env is the final stage's ENV, KEY=VALUE, applied over the base's.
	Env []string
	// User and Entrypoint replace the base's when set.
	User       string
	Entrypoint []string
	// ExposedPorts are the final stage's EXPOSE, such as 8080/tcp.
	ExposedPorts []string
}

// Config returns the image's config: the base's with the final stage's changes. A new
// ENTRYPOINT clears the base's CMD, as docker build does.
func (img Image) Config() v1.Config {
	c := img.Base.Config
	c.Env = append([]string(nil), c.Env...)
	for _, kv := range img.Env {
		c.Env = setEnv(c.Env, kv)
	}
	if img.User != "" {
		c.User = img.User
	}
	if img.Entrypoint != nil {
		c.Entrypoint, c.Cmd = img.Entrypoint, nil
	}
	if len(img.ExposedPorts) > 0 {
		c.ExposedPorts = map[string]struct{}{}
		for _, p := range img.ExposedPorts {
			c.ExposedPorts[p] = struct{}{}
		}
	}
	return c
}

func setEnv(env []string, kv string) []string {
	key, _, _ := strings.Cut(kv, "=")
	for i, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == key {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}

// Inputs are what the images are made of.
type Inputs struct {
	// Binaries holds the static binaries by their name in bin/ (make build):
	// stagehand-deployer, stagehand-controller, stagehand-testapp, stagehand-example-strategy.
	Binaries map[string][]byte
	Busybox  Busybox
	// CACerts is the CA bundle that distroless carries; none when empty.
	CACerts []byte
}

// BinaryNames are the binaries of bin/ that the images need.
var BinaryNames = []string{"stagehand-deployer", "stagehand-controller", "stagehand-testapp", "stagehand-example-strategy"}

// ReadBinaries reads BinaryNames from dir and checks that each is a static executable.
func ReadBinaries(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, n := range BinaryNames {
		p := filepath.Join(dir, n)
		if err := CheckStatic(p); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s (make build puts it there): %w", p, err)
		}
		out[n] = data
	}
	return out, nil
}

const usr = "65532:65532"

// Images returns the four images of docs/images.md, the shell image for hook pods and the
// pause image for the real node.
func Images(in Inputs) ([]Image, error) {
	for _, n := range BinaryNames {
		if len(in.Binaries[n]) == 0 {
			return nil, fmt.Errorf("the binary %s is missing or empty", n)
		}
	}
	if len(in.Busybox.Binary) == 0 || len(in.Busybox.applets()) == 0 {
		return nil, fmt.Errorf("busybox or its list of applets is missing")
	}
	bin := func(p, n string) Tree {
		t := Tree{}
		t.File(p, 0o755, in.Binaries[n])
		return t
	}
	deployer := bin("/usr/local/bin/stagehand-deployer", "stagehand-deployer")
	deployer.Symlink("/bin/sh", "/busybox/sh")
	deployer.Symlink("/usr/local/bin/openshift-deploy", "stagehand-deployer")
	return []Image{{
		Repository: "stagehand/deployer", Dockerfile: "Dockerfile.deployer",
		Base: DistrolessDebug(in.CACerts, in.Busybox), Layer: deployer,
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin:/busybox"},
		User: usr, Entrypoint: []string{"/usr/local/bin/stagehand-deployer"},
	}, {
		Repository: "stagehand/controller", Dockerfile: "Dockerfile.controller",
		Base:  DistrolessStatic(in.CACerts),
		Layer: bin("/stagehand-controller", "stagehand-controller"),
		User:  usr, Entrypoint: []string{"/stagehand-controller"}, ExposedPorts: []string{"8080/tcp"},
	}, {
		Repository: "stagehand/testapp", Dockerfile: "e2e/testapp/Dockerfile",
		Base:  BusyboxImage(in.CACerts, in.Busybox),
		Layer: bin("/usr/local/bin/testapp", "stagehand-testapp"),
		User:  usr, Entrypoint: []string{"/usr/local/bin/testapp"},
	}, {
		Repository: "stagehand/example-strategy", Dockerfile: "examples/custom-strategy/Dockerfile",
		Base:  DistrolessStatic(in.CACerts),
		Layer: bin("/usr/local/bin/stagehand-example-strategy", "stagehand-example-strategy"),
		User:  usr, Entrypoint: []string{"/usr/local/bin/stagehand-example-strategy"},
	}, {
		// Hook and defer step pods that run a command: busybox's shell and tools, as a
		// numeric non-root user so that they pass the restricted Pod Security Standard. No
		// hook of the suite needs root; one that does sets runAsUser itself.
		Repository: "stagehand/shell",
		Base:       BusyboxImage(in.CACerts, in.Busybox), Layer: Tree{},
		User: usr,
	}, {
		// The sandbox ("pause") image of the local cluster's real node (containerd's
		// sandbox_image): a process that sleeps until it is killed. It runs as root, the
		// base's user, which also makes it the image a runAsNonRoot test expects refused.
		Repository: "stagehand/pause",
		Base:       BusyboxImage(in.CACerts, in.Busybox), Layer: Tree{},
		Entrypoint: []string{"/bin/sleep", "2147483647"},
	}}, nil
}
