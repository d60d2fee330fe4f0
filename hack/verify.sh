#!/usr/bin/env bash
# Fails when generated code is out of date with api/, when gofmt, go vet or golangci-lint
# (pinned in hack/tools/lint) find anything, or when a go.mod or go.sum is not tidy. The
# checks cover the four Go modules: the product (the root), the e2e suite (e2e/), the
# local cluster (e2e/localcluster) and the image builder (hack/images).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fail=0
modules=(. e2e e2e/localcluster hack/images)

echo "verify: generated code"
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
generated=(api deploy/crds charts/stagehand/crds charts/stagehand/files)
for d in "${generated[@]}"; do mkdir -p "$snapshot/$(dirname "$d")"; cp -a "$d" "$snapshot/$d"; done
hack/update-codegen.sh >/dev/null
for d in "${generated[@]}"; do
  if ! diff -r "$snapshot/$d" "$d" >/dev/null; then
    echo "  $d is out of date with api/: run make generate and commit the result" >&2
    diff -r "$snapshot/$d" "$d" | head -20 >&2 || true
    fail=1
  fi
done

echo "verify: the Helm chart (pinned in hack/tools/helm) against deploy/"
helm=$root/bin/tools/helm
hack/build-tools.sh helm
lint_out=$("$helm" lint --strict charts/stagehand 2>&1) || { echo "$lint_out" >&2; fail=1; }
if grep -E '^\[(WARNING|ERROR)\]' <<<"$lint_out" >&2; then fail=1; fi
"$helm" template stagehand charts/stagehand --namespace stagehand-system --include-crds --kube-version v1.37.0 \
  --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding \
  >"$snapshot/chart.yaml" || fail=1
go run ./hack/chartdiff deploy "$snapshot/chart.yaml" || fail=1
# On a cluster before 1.36 (no MutatingAdmissionPolicy API) the chart leaves that policy out.
if "$helm" template stagehand charts/stagehand --namespace stagehand-system --kube-version v1.34.0 | grep -q '^kind: MutatingAdmissionPolicy'; then
  echo "verify: the chart renders a MutatingAdmissionPolicy for a cluster that does not serve the API" >&2
  fail=1
fi

echo "verify: the Grafana dashboard queries only series the controller exports"
go test -count=1 -run '^TestDashboardQueriesOnlyExportedSeries$' ./cmd/stagehand-controller/ >/dev/null || fail=1

echo "verify: gofmt"
unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [[ -n $unformatted ]]; then
  echo "  gofmt would change: $unformatted" >&2
  fail=1
fi

echo "verify: go vet"
for m in "${modules[@]}"; do
  (cd "$m" && go vet ./... && go vet -tags e2e ./... && go vet -tags e2e,realnode ./...) || fail=1
done

echo "verify: go mod tidy"
for m in "${modules[@]}"; do
  if ! (cd "$m" && go mod tidy -diff); then
    echo "  $m/go.mod or go.sum is not tidy: run go mod tidy in $m" >&2
    fail=1
  fi
done

echo "verify: golangci-lint"
lint=$root/bin/tools/golangci-lint
stamp=$root/bin/tools/.lint-stamp
want=$(sha256sum hack/tools/lint/go.sum | cut -d' ' -f1)
if [[ ! -x $lint || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "  building golangci-lint (pinned in hack/tools/lint)"
  mkdir -p "$root/bin/tools"
  (cd hack/tools/lint && go build -o "$lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
  echo "$want" >"$stamp"
fi
for m in "${modules[@]}"; do
  (cd "$m" && "$lint" run --allow-parallel-runners --build-tags e2e,realnode ./...) || fail=1
done

echo "verify: file length"
# Files stay short enough to read in one sitting (STYLE.md): at most 400 lines of Go in the
# product module (generated code aside) and in the bench. golangci-lint's funlen keeps
# functions at 100 lines.
while IFS= read -r f; do
  n=$(wc -l <"$f")
  if ((n > 400)); then
    echo "  $f has $n lines, more than 400: split it by topic into two files" >&2
    fail=1
  fi
done < <(git ls-files --cached --others --exclude-standard '*.go' |
  grep -Ev '^e2e/|^api/client/|zz_generated' ; git ls-files --cached --others --exclude-standard 'e2e/bench/*.go')

echo "verify: Dockerfiles cover the packages their binaries import"
{ hack/verify-dockerfiles.sh && hack/verify-dockerfiles_test.sh; } || fail=1

if ((fail)); then
  echo "verify: FAILED" >&2
  exit 1
fi
echo "verify: OK"
