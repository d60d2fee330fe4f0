#!/usr/bin/env bash
# Builds the Helm pinned in hack/tools/helm into bin/tools/helm, unless the one there was
# built from the same go.sum. make verify (helm lint, the chart against deploy/) and the
# e2e suite (helm install and upgrade) use it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helm=$root/bin/tools/helm
stamp=$root/bin/tools/.helm-stamp
want=$(sha256sum "$root/hack/tools/helm/go.sum" | cut -d' ' -f1)
if [[ -x $helm && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
echo "building helm (pinned in hack/tools/helm)"
mkdir -p "$root/bin/tools"
(cd "$root/hack/tools/helm" && go build -o "$helm" helm.sh/helm/v3/cmd/helm)
echo "$want" >"$stamp"
