#!/usr/bin/env bash
# Builds the pinned control-plane binaries for the local test cluster into
# bin/k8s-v$KUBE_VERSION/: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl.
# The build is skipped when every binary is already there (a cold build takes ~7 minutes on 2 cores).
# KUBE_OLDEST=1 builds the oldest Kubernetes that Stagehand supports (docs/install.md) instead,
# from hack/tools/controlplane-oldest, for make test-oldest.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBE_VERSION=1.37.2
tools=controlplane
if [[ ${KUBE_OLDEST:-} == 1 ]]; then
  KUBE_VERSION=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { sub(/^v/, "", $3); print $3 }' "$root/hack/tools/controlplane-oldest/go.mod")
  tools=controlplane-oldest
fi
ETCD_VERSION=3.6.8
out=${CONTROLPLANE_BIN:-$root/bin/k8s-v$KUBE_VERSION}
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

missing=0
for b in "${bins[@]}"; do [[ -x $out/$b ]] || missing=1; done
if ((missing == 0)); then
  echo "control plane v$KUBE_VERSION already built in $out"
  exit 0
fi
mkdir -p "$out"

minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"

echo "building etcd v$ETCD_VERSION into $out"
(cd "$root/hack/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)

echo "building Kubernetes v$KUBE_VERSION control plane into $out (cold: ~7 minutes)"
(cd "$root/hack/tools/$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl)
echo "control plane ready in $out"
