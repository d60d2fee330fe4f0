#!/usr/bin/env bash
# Installs what the local cluster's opt-in real node runs on (docs/localcluster.md, "Real
# node"): Debian's containerd, runc, containernetworking-plugins (the CNI plugins in
# /usr/lib/cni) and iptables (for kube-proxy). Does nothing, quietly, when all are there.
#
# containerd's package wants to start a system service; the local cluster runs containerd
# itself, with its own config, root and socket. So this script forbids service starts during
# the install (policy-rc.d answers 101) and keeps the service from starting at boot.
set -euo pipefail

have() {
  command -v containerd >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && command -v iptables >/dev/null 2>&1 &&
    [[ -x /usr/lib/cni/bridge ]]
}
if have; then
  exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-node "install containerd 1.6+, runc and the CNI plugins (in /usr/lib/cni) by hand" \
  containerd runc containernetworking-plugins iptables
sudo=("${SUDO[@]}")

# Should a service manager have started containerd despite the policy, stop it, and keep it
# from starting at boot: a system containerd would not disturb ours (it has its own socket),
# but nothing here needs it.
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  "${sudo[@]}" systemctl disable --now containerd.service >/dev/null 2>&1 || true
else
  "${sudo[@]}" deb-systemd-helper disable containerd.service >/dev/null 2>&1 || true
fi

have || {
  echo "install-node: containerd, runc, iptables or /usr/lib/cni/bridge is still missing after the install" >&2
  exit 1
}
echo "install-node: $(containerd --version), $(runc --version | head -1) installed"
