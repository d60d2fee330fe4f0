#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard's browser test (e2e/dashboard_test.go drives
# it headless over the Chrome DevTools Protocol; docs/dashboard.md). Does nothing, quietly,
# when chromium (or $E2E_CHROMIUM) is already there.
set -euo pipefail

if [[ -n ${E2E_CHROMIUM:-} && -x ${E2E_CHROMIUM} ]] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-chromium "install Chromium by hand and name it with E2E_CHROMIUM=" chromium

command -v chromium >/dev/null 2>&1 || {
  echo "install-chromium: chromium is still missing after the install" >&2
  exit 1
}
echo "install-chromium: $(chromium --version 2>/dev/null | tail -1) installed"
