#!/usr/bin/env bash
# make demo: starts the local control plane (bin/stagehand-localcluster up), installs
# Stagehand from deploy/, and shows a DeploymentConfig. The rollout itself (a controller
# and a deployer pod per revision) arrives with the rollout-loop issue; until then the demo
# shows the API at work (defaults, validation) and says so.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=$root/bin
kubectl=$(ls -d "$bin"/k8s-v*/kubectl | head -1)
export KUBECONFIG=$root/.localcluster/kubeconfig

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, node agent)"
"$bin/stagehand-localcluster" down >/dev/null 2>&1 || true
"$bin/stagehand-localcluster" up
"$kubectl" get nodes

step "Installing Stagehand: kubectl apply -k deploy/"
"$kubectl" apply -k deploy/
established=
for _ in $(seq 1 60); do
  if "$kubectl" get crd deploymentconfigs.stagehand.dev \
    -o jsonpath='{range .status.conditions[*]}{.type}={.status}{"\n"}{end}' 2>/dev/null | grep -qx 'Established=True'; then
    established=True
    break
  fi
  sleep 0.5
done
[[ $established == True ]] || { echo "the CRD never became Established" >&2; exit 1; }

step "Creating the example DeploymentConfig examples/hello.yaml"
"$kubectl" apply -f examples/hello.yaml
"$kubectl" get dc hello
echo "The apiserver filled in the defaults:"
"$kubectl" get dc hello -o jsonpath='{"  strategy: "}{.spec.strategy}{"\n  triggers: "}{.spec.triggers}{"\n  revisionHistoryLimit: "}{.spec.revisionHistoryLimit}{"\n"}'

step "Admission refuses an invalid one (a mid hook on a Rolling strategy), naming the field"
if "$kubectl" apply -f - <<'YAML'
apiVersion: stagehand.dev/v1alpha1
kind: DeploymentConfig
metadata: {name: broken}
spec:
  template: {metadata: {labels: {app: broken}}, spec: {containers: [{name: app, image: app:1}]}}
  strategy:
    type: Rolling
    recreateParams: {mid: {failurePolicy: Abort, execNewPod: {command: [migrate], containerName: app}}}
YAML
then
  echo "unexpected: the invalid DeploymentConfig was accepted" >&2
  exit 1
fi

step "Not yet: rollouts"
echo "No controller runs yet, so no revision is rolled out. The controller, the deployer pod"
echo "and the Recreate and Rolling strategies arrive with the rollout-loop issue."
echo
echo "The cluster keeps running. Use it with:  export KUBECONFIG=$KUBECONFIG"
echo "Stop it with:                            make cluster-down"
