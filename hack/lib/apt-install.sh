# Sourced by the hack/install-*.sh scripts: the one way this project installs Debian packages.
#
#   apt_install <script name> <what to do without apt-get> <package>...
#
# It runs apt-get update and install as root, or through sudo, with the output kept in a log
# that is printed only on failure. The packages' maintainer scripts may not start system
# services meanwhile (policy-rc.d answers 101, "action forbidden"; an existing policy is put
# back afterwards): the local cluster runs the registry and containerd itself, on ports and
# sockets of its own. After it returns, SUDO holds the prefix the caller's own root commands
# need (empty as root).

SUDO=()

apt_install() {
  local name=$1 manual=$2
  shift 2
  if ((EUID != 0)); then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "$name: installing $* needs root or sudo" >&2
      exit 1
    fi
    SUDO=(sudo)
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: $* missing and there is no apt-get; $manual" >&2
    exit 1
  fi
  local policy=/usr/sbin/policy-rc.d backup="" log
  if [[ -e $policy ]]; then
    backup=$(mktemp)
    "${SUDO[@]}" cp -p "$policy" "$backup"
  fi
  log=$(mktemp)
  printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
  "${SUDO[@]}" chmod 0755 "$policy"
  echo "$name: installing Debian's $*"
  local failed=""
  if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1; then
    failed="apt-get update"
  elif ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >>"$log" 2>&1; then
    failed="apt-get install $*"
  fi
  if [[ -n $backup ]]; then
    "${SUDO[@]}" cp -p "$backup" "$policy"
    "${SUDO[@]}" rm -f "$backup"
  else
    "${SUDO[@]}" rm -f "$policy"
  fi
  if [[ -n $failed ]]; then
    cat "$log" >&2
    rm -f "$log"
    echo "$name: $failed failed" >&2
    exit 1
  fi
  rm -f "$log"
}
