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

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-registry: docker-registry is missing, and installing it needs root or sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-registry: docker-registry is missing and there is no apt-get;" \
    "install the Distribution registry (a binary named docker-registry) by hand" >&2
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

echo "install-registry: installing Debian's docker-registry"
apt() {
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "install-registry: apt-get $* failed" >&2
    exit 1
  fi
}
apt update -q
apt install -y -q --no-install-recommends docker-registry

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
