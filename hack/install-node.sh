#!/usr/bin/env bash
# Installs what the local cluster's opt-in real node runs on (docs/localcluster.md, "Real
# node"): Debian's containerd, runc and containernetworking-plugins (the CNI plugins in
# /usr/lib/cni). Does nothing, quietly, when all three are there.
#
# containerd's package wants to start a system service; the local cluster runs containerd
# itself, with its own config, root and socket. So this script forbids service starts during
# the install (policy-rc.d answers 101) and keeps the service from starting at boot.
set -euo pipefail

have() {
  command -v containerd >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && [[ -x /usr/lib/cni/bridge ]]
}
if have; then
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-node: containerd, runc or the CNI plugins are missing, and installing them needs root or sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-node: containerd, runc or the CNI plugins are missing and there is no apt-get;" \
    "install containerd 1.6+, runc and the CNI plugins (in /usr/lib/cni) by hand" >&2
  exit 1
fi

# invoke-rc.d consults /usr/sbin/policy-rc.d; exit code 101 means "action forbidden". Keep an
# existing policy and restore it afterwards.
policy=/usr/sbin/policy-rc.d
backup=""
if [[ -e $policy ]]; then
  backup=$(mktemp)
  "${sudo[@]}" cp -p "$policy" "$backup"
fi
log=$(mktemp)
cleanup() {
  if [[ -n $backup ]]; then
    "${sudo[@]}" cp -p "$backup" "$policy"
    "${sudo[@]}" rm -f "$backup"
  else
    "${sudo[@]}" rm -f "$policy"
  fi
  rm -f "$log"
}
trap cleanup EXIT
printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
"${sudo[@]}" chmod 0755 "$policy"

echo "install-node: installing Debian's containerd, runc and containernetworking-plugins"
apt() {
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "install-node: apt-get $* failed" >&2
    exit 1
  fi
}
apt update -q
apt install -y -q --no-install-recommends containerd runc containernetworking-plugins

# Should a service manager have started containerd despite the policy, stop it, and keep it
# from starting at boot: a system containerd would not disturb ours (it has its own socket),
# but nothing here needs it.
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  "${sudo[@]}" systemctl disable --now containerd.service >/dev/null 2>&1 || true
else
  "${sudo[@]}" deb-systemd-helper disable containerd.service >/dev/null 2>&1 || true
fi

have || {
  echo "install-node: containerd, runc or /usr/lib/cni/bridge is still missing after the install" >&2
  exit 1
}
echo "install-node: $(containerd --version), $(runc --version | head -1) installed"
