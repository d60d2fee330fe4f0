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

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-busybox "put a statically linked busybox at $busybox by hand, or name one with BUSYBOX=" busybox-static

[[ -x $busybox ]] || {
  echo "install-busybox: $busybox is still missing after the install" >&2
  exit 1
}
echo "install-busybox: $("$busybox" | head -1) installed"
