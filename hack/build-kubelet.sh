#!/usr/bin/env bash
# Builds the pinned kubelet and kube-proxy for the local cluster's real node
# (docs/localcluster.md, "Real node") into bin/k8s-v$KUBE_VERSION-node/, from the same tools
# module and version as the control plane (hack/build-controlplane.sh). Skipped when both
# binaries are already there (a build takes ~30 s with a warm Go cache, a few minutes cold).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBE_VERSION=1.37.2
out=${KUBELET_BIN:-$root/bin/k8s-v$KUBE_VERSION-node}

if [[ -x $out/kubelet && -x $out/kube-proxy ]]; then
  echo "kubelet and kube-proxy v$KUBE_VERSION already built in $out"
  exit 0
fi
mkdir -p "$out"

minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"

echo "building the kubelet and kube-proxy v$KUBE_VERSION into $out"
(cd "$root/hack/tools/controlplane" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
echo "kubelet and kube-proxy ready in $out"
