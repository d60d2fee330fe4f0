#!/usr/bin/env bash
# Regenerates everything derived from api/: deepcopy functions, the typed clientset, listers
# and informers (k8s.io/code-generator), and the CRD YAML (controller-gen). The generators are
# pinned in hack/tools/codegen and built into bin/tools on first use.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
module=github.com/stagehand-dev/stagehand
tools=$root/bin/tools
header=$root/hack/boilerplate.go.txt
apis=(./api/v1alpha1)
api_pkgs=("$module/api/v1alpha1")

gens=(deepcopy-gen client-gen lister-gen informer-gen controller-gen crdpatch)
missing=0
for g in "${gens[@]}"; do [[ -x $tools/$g ]] || missing=1; done
# Rebuild when the pinned versions change.
stamp=$tools/.stamp
want=$(cat hack/tools/codegen/go.sum hack/tools/codegen/crdpatch/*.go | sha256sum | cut -d' ' -f1)
if ((missing)) || [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "building code generators into $tools"
  mkdir -p "$tools"
  (cd hack/tools/codegen && go build -o "$tools/" \
    k8s.io/code-generator/cmd/deepcopy-gen \
    k8s.io/code-generator/cmd/client-gen \
    k8s.io/code-generator/cmd/lister-gen \
    k8s.io/code-generator/cmd/informer-gen \
    sigs.k8s.io/controller-tools/cmd/controller-gen \
    ./crdpatch)
  echo "$want" >"$stamp"
fi

echo "deepcopy"
"$tools/deepcopy-gen" --go-header-file "$header" --output-file zz_generated.deepcopy.go "${apis[@]}"

echo "clientset, listers, informers"
rm -rf api/client/clientset api/client/listers api/client/informers
"$tools/client-gen" --go-header-file "$header" \
  --clientset-name versioned --input-base "" --input "${api_pkgs[@]}" \
  --output-pkg "$module/api/client/clientset" --output-dir api/client/clientset
"$tools/lister-gen" --go-header-file "$header" \
  --output-pkg "$module/api/client/listers" --output-dir api/client/listers "${api_pkgs[@]}"
"$tools/informer-gen" --go-header-file "$header" \
  --versioned-clientset-package "$module/api/client/clientset/versioned" \
  --listers-package "$module/api/client/listers" \
  --output-pkg "$module/api/client/informers" --output-dir api/client/informers "${api_pkgs[@]}"

echo "CRDs"
"$tools/controller-gen" crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:dir=deploy/crds
"$tools/crdpatch" deploy/crds/*.yaml

echo "Helm chart: what it shares with deploy/"
hack/update-chart.sh
