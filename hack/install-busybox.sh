#!/usr/bin/env bash
# Installs Debian's busybox-static, whose /bin/busybox `make oci-images` puts at /busybox in
# the images it builds without Docker (docs/images.md). Does nothing, quietly, when
# /bin/busybox (or $BUSYBOX) is already a statically linked busybox.
set -euo pipefail

busybox=${BUSYBOX:-/bin/busybox}
if [[ -x $busybox ]]; then
  # Debian's plain busybox package installs a dynamically linked /bin/busybox, which would
  # not run in an image without libc.
  if ! command -v file >/dev/null 2>&1 || ! file -bL "$busybox" | grep -q 'dynamically linked'; then
    exit 0
  fi
  echo "install-busybox: $busybox is dynamically linked; replacing it with busybox-static"
fi

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-busybox: $busybox is missing, and installing busybox-static needs root or sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-busybox: $busybox is missing and there is no apt-get;" \
    "put a statically linked busybox there by hand, or name one with BUSYBOX=" >&2
  exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "install-busybox: installing Debian's busybox-static"
apt() {
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "install-busybox: apt-get $* failed" >&2
    exit 1
  fi
}
apt update -q
apt install -y -q --no-install-recommends busybox-static

[[ -x $busybox ]] || {
  echo "install-busybox: $busybox is still missing after the install" >&2
  exit 1
}
echo "install-busybox: $("$busybox" | head -1) installed"
