#!/usr/bin/env bash
# Installs Debian's docker-registry (the CNCF Distribution registry) for the local cluster's
# `up --registry` and the tests that push images (docs/localcluster.md). Does nothing, quietly,
# when docker-registry is already on PATH.
#
# The package's maintainer scripts want to enable and start a system service. The local cluster
# runs the registry itself, on a loopback port of its own, so this script forbids service starts
# during the install (policy-rc.d answers 101) and stops the service afterwards should anything
# have started it anyway. Nothing keeps running once it returns.
set -euo pipefail

if command -v docker-registry >/dev/null 2>&1; then
  exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-registry "install the Distribution registry (a binary named docker-registry) by hand" docker-registry
sudo=("${SUDO[@]}")

# Belt and braces: should a service manager have started the registry despite the policy,
# stop it. And keep it from starting at boot, where it would take port 5000.
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  "${sudo[@]}" systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
else
  "${sudo[@]}" deb-systemd-helper disable docker-registry.service >/dev/null 2>&1 || true
  "${sudo[@]}" update-rc.d docker-registry disable >/dev/null 2>&1 || true
fi
if pids=$(pgrep -x docker-registry); then
  for pid in $pids; do
    # Only the packaged service, which runs its config from /etc; never a local cluster's.
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '/etc/docker/registry/config.yml'; then
      "${sudo[@]}" kill "$pid" 2>/dev/null || true
    fi
  done
fi

command -v docker-registry >/dev/null 2>&1 || {
  echo "install-registry: docker-registry is still not on PATH after the install" >&2
  exit 1
}
echo "install-registry: $(docker-registry --version 2>/dev/null || echo docker-registry) installed"
