// Build-only tools for the container images: the builder of `make oci-images`, which needs no
// Docker, and its check against the Dockerfiles. A module of its own, so that neither the
// product module nor the local cluster's carries a Dockerfile parser.
module github.com/stagehand-dev/stagehand/hack/images

go 1.26.8

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/docker/cli v29.8.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.9 // indirect
	github.com/klauspost/compress v1.20.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
)
