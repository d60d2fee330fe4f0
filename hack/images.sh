#!/usr/bin/env bash
# Builds the container images stagehand/controller and stagehand/deployer with docker.
# On a machine without a Docker engine it says so and fails: it never pretends.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tag=${IMAGE_TAG:-dev}

for f in Dockerfile.controller Dockerfile.deployer; do
  if [[ ! -f $f ]]; then
    echo "make images: $f does not exist yet; the images arrive with the rollout-loop issue." >&2
    exit 2
  fi
done
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "make images: no Docker engine answers here (docker info failed), so no image can be built on this machine." >&2
  echo "The local cluster (make test, make demo) runs the binaries from bin/ instead; see docs/localcluster.md." >&2
  exit 2
fi
docker build -f Dockerfile.controller -t "stagehand/controller:$tag" .
docker build -f Dockerfile.deployer -t "stagehand/deployer:$tag" .
