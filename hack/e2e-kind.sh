#!/usr/bin/env bash
# Runs the e2e suite on a kind cluster: creates the cluster, builds and loads the images,
# installs Stagehand from deploy/, and runs the e2e suite (`go test -tags e2e .` in the e2e
# module, e2e/) against it with E2E_KUBECONFIG. The integration tests (e2e/integration) run
# on the local control plane only, with make test. Needs Docker and kind; on a machine
# without them it says so and fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cluster=${KIND_CLUSTER:-stagehand-e2e}
tag=${IMAGE_TAG:-e2e}

for tool in docker kind kubectl; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "make e2e-kind: $tool is not installed. It needs Docker, kind and kubectl; without them use make test (local control plane)." >&2
    exit 2
  fi
done
if ! docker info >/dev/null 2>&1; then
  echo "make e2e-kind: no Docker engine answers here (docker info failed); kind cannot run. Use make test." >&2
  exit 2
fi

make build # the suite runs bin/kubectl-stagehand
IMAGE_TAG=$tag hack/images.sh
docker build -f e2e/testapp/Dockerfile -t "stagehand/testapp:$tag" .
# The rollback tests need distinct image names for the same app.
for v in 2 3; do docker tag "stagehand/testapp:$tag" "stagehand/testapp:$tag-v$v"; done
docker build -f examples/custom-strategy/Dockerfile -t "stagehand/example-strategy:$tag" .
if ! kind get clusters | grep -qx "$cluster"; then
  kind create cluster --name "$cluster" --wait 120s
fi
kubeconfig=$(mktemp)
trap 'rm -f "$kubeconfig"' EXIT
kind get kubeconfig --name "$cluster" >"$kubeconfig"
kind load docker-image --name "$cluster" "stagehand/controller:$tag" "stagehand/deployer:$tag" \
  "stagehand/testapp:$tag" "stagehand/testapp:$tag-v2" "stagehand/testapp:$tag-v3" "stagehand/example-strategy:$tag"
# Install deploy/ with this run's image tags.
overlay=$root/bin/e2e-kind-overlay # kustomize wants a relative path to deploy/
mkdir -p "$overlay"
trap 'rm -f "$kubeconfig"; rm -rf "$overlay"' EXIT
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../deploy]
images:
  - {name: stagehand/controller, newTag: "$tag"}
patches:
  - target: {kind: Deployment, name: stagehand-controller}
    patch: |
      - {op: replace, path: /spec/template/spec/containers/0/env/0/value, value: "stagehand/deployer:$tag"}
YAML
kubectl --kubeconfig "$kubeconfig" apply -k "$overlay"
cd e2e
E2E_KUBECONFIG=$kubeconfig E2E_IMAGE_TAG=$tag go test -count=1 -timeout=40m -tags e2e .
