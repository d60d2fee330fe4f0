#!/usr/bin/env bash
# Builds the release archives into dist/: kubectl-stagehand, stagehand-controller and
# stagehand-deployer for each platform, one tar.gz per platform with sha256 sums in
# dist/sha256sums.txt, and the krew plugin manifest plugins/stagehand.yaml that points at
# them (docs/install.md).
#
#   VERSION      the release (default: v<the chart's appVersion>)
#   PLATFORMS    os/arch list (default: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
#   RELEASE_URL  where the archives will be downloaded from (the krew manifest's URIs)
#   DIST         the output folder (default: dist)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/stagehand/Chart.yaml)
version=${VERSION:-v$app_version}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
url=${RELEASE_URL:-https://github.com/stagehand-dev/stagehand/releases/download/$version}
dist=${DIST:-$root/dist}
manifest=${MANIFEST:-$root/plugins/stagehand.yaml}
module=github.com/stagehand-dev/stagehand
ldflags="-s -w -X $module/internal/version.Version=$version"

rm -rf "$dist"
mkdir -p "$dist" "$(dirname "$manifest")"
platform_entries=""
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  name=stagehand_${version}_${os}_${arch}
  work=$dist/$name
  mkdir -p "$work"
  echo "release: $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$work/" \
    ./cmd/kubectl-stagehand ./cmd/stagehand-controller ./cmd/stagehand-deployer
  cp README.md "$work/"
  # Reproducible archives: fixed order, owner and time.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' \
    -C "$work" -czf "$dist/$name.tar.gz" .
  rm -rf "$work"
  sum=$(sha256sum "$dist/$name.tar.gz" | cut -d' ' -f1)
  platform_entries+="    - selector:
        matchLabels:
          os: $os
          arch: $arch
      uri: $url/$name.tar.gz
      sha256: $sum
      files:
        - from: kubectl-stagehand
          to: .
        - from: README.md
          to: .
      bin: kubectl-stagehand
"
done
(cd "$dist" && sha256sum ./*.tar.gz | sed 's| \./| |' >sha256sums.txt)

cat >"$manifest" <<YAML
# Written by make release (hack/release.sh) for $version; install with
#   kubectl krew install --manifest=plugins/stagehand.yaml
# or, before the archives are published, from a local one:
#   kubectl krew install --manifest=plugins/stagehand.yaml --archive=dist/stagehand_${version}_<os>_<arch>.tar.gz
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: stagehand
spec:
  version: $version
  homepage: https://github.com/stagehand-dev/stagehand
  shortDescription: Roll out, watch and operate Stagehand DeploymentConfigs
  description: |
    kubectl stagehand drives Stagehand's DeploymentConfigs: rollout status, latest,
    retry, cancel, undo, pause, resume and promote; logs of deployers and hooks; set
    image, env, triggers and hooks; adopt a Deployment and eject it again; convert
    OpenShift DeploymentConfigs. It needs Stagehand installed in the cluster.
  platforms:
$platform_entries
YAML
echo "release: $(ls "$dist"/*.tar.gz | wc -l) archives, $dist/sha256sums.txt, $manifest"
