#!/usr/bin/env bash
# Builds pinned tools from their modules under hack/tools/ into bin/tools/, unless the ones
# there were built from the same go.sum:
#   helm                    (hack/tools/helm)  make verify (helm lint, the chart against
#                                              deploy/) and the e2e suite (install, upgrade)
#   krew, validate-krew-manifest (hack/tools/krew)  the release test (e2e/release)
# With arguments, only those modules: hack/build-tools.sh helm
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
declare -A packages=(
  [helm]="helm.sh/helm/v3/cmd/helm"
  [krew]="sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
modules=("$@")
if [[ ${#modules[@]} -eq 0 ]]; then modules=(helm krew); fi
mkdir -p "$root/bin/tools"
for m in "${modules[@]}"; do
  stamp=$root/bin/tools/.$m-stamp
  want=$(sha256sum "$root/hack/tools/$m/go.sum" | cut -d' ' -f1)
  built=true
  for pkg in ${packages[$m]}; do
    [[ -x $root/bin/tools/$(basename "$pkg") ]] || built=false
  done
  if $built && [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    continue
  fi
  echo "building ${packages[$m]} (pinned in hack/tools/$m)"
  # shellcheck disable=SC2086 # one word per package
  (cd "$root/hack/tools/$m" && go build -o "$root/bin/tools/" ${packages[$m]})
  echo "$want" >"$stamp"
done
