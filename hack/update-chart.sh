#!/usr/bin/env bash
# Copies what the Helm chart shares with deploy/ into charts/stagehand: the CRDs (crds/),
# and the RBAC and admission policies (files/), which the chart renders with its labels.
# deploy/ is the source; make generate runs this, and make verify checks that the chart
# renders what deploy/ holds (hack/chartdiff).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart=$root/charts/stagehand
rm -rf "$chart/crds" "$chart/files"
mkdir -p "$chart/crds" "$chart/files/rbac" "$chart/files/policies"
cp "$root"/deploy/crds/*.yaml "$chart/crds/"
cp "$root"/deploy/rbac/*.yaml "$chart/files/rbac/"
cp "$root"/deploy/policies/*.yaml "$chart/files/policies/"
