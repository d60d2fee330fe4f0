#!/usr/bin/env bash
# Checks that every Dockerfile that builds a Go binary of this repository gets everything
# its `go build` needs into the build stage: the files of each package of the repository
# that `go list -deps` names for the binary, and go.mod and go.sum. A file counts when a
# COPY puts it where the build expects it and .dockerignore does not leave it out. No
# machine here runs Docker, so this is what catches a moved or new package before
# `make images` does. See docs/images.md; the checker is hack/images/verifydockerfiles.
#
#   hack/verify-dockerfiles.sh [-dockerfiles DIR] [-list] [DOCKERFILE...]
#
# -dockerfiles DIR reads the Dockerfiles and .dockerignore from DIR (laid out like the
# repository) instead of the repository, whose Go sources are used either way; the
# self-test, hack/verify-dockerfiles_test.sh, checks mutated copies that way.
# Exit status: 0 all good, 1 a Dockerfile misses something, 2 the check could not run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=$root/bin/tools/verify-dockerfiles
mkdir -p "$root/bin/tools"
(cd hack/images && go build -o "$bin" ./verifydockerfiles)
exec "$bin" -root "$root" "$@"
