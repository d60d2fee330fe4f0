#!/usr/bin/env bash
# make demo: starts the local control plane (bin/stagehand-localcluster up), installs
# Stagehand from deploy/ (the controller runs the freshly built binary through the node
# agent's image map), rolls out two revisions of examples/hello.yaml, then two of
# examples/hooks.yaml with pre, mid and post hooks, two of examples/exec-hooks.yaml with a
# post exec hook (a cache flush in the new pods) and the same flush run by hand, a canary
# of examples/canary.yaml that pauses at a step until rollout resume, a
# DeferPolicy's clean-up steps after a pod of examples/defer.yaml stops, and ends
# with the kubectl plugin: history and a rollback (undo).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=$root/bin
kubectl=$bin/k8s-v$(awk -F= '/^KUBE_VERSION=/ { print $2; exit }' hack/build-controlplane.sh)/kubectl
export KUBECONFIG=$root/.localcluster/kubeconfig
# kubectl finds its plugins on the PATH: bin/kubectl-stagehand is `kubectl stagehand`.
export PATH=$bin:$PATH

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, node agent)"
"$bin/stagehand-localcluster" down >/dev/null 2>&1 || true
"$bin/stagehand-localcluster" up
"$kubectl" get nodes

step "Installing Stagehand: kubectl apply -k deploy/, with the local cluster's pod IPs"
# Every pod of the local cluster shares the host's network, so the two controller
# replicas cannot both listen on :8080; this overlay gives each pod an IP of its own and
# serves the metrics and probes there (docs/localcluster.md, "Pod IPs").
overlay=$root/.localcluster/deploy-overlay # kustomize wants a relative path to deploy/
mkdir -p "$overlay"
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../deploy]
patches:
  - target: {kind: Deployment, name: stagehand-controller}
    patch: |
      - {op: add, path: /spec/template/metadata/annotations, value: {localcluster.stagehand.dev/own-ip: "true"}}
      - {op: add, path: /spec/template/spec/containers/0/args/-, value: "--metrics-addr=\$(POD_IP):8080"}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}}
YAML
"$kubectl" apply -k "$overlay"
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

step "Waiting for the controller (deploy/controller, running the freshly built binary)"
"$kubectl" -n stagehand-system rollout status deployment/stagehand-controller --timeout=120s

step "Creating examples/hello.yaml: revision 1"
"$kubectl" apply -f examples/hello.yaml
"$kubectl" stagehand rollout status dc/hello --timeout=2m
"$kubectl" get dc hello
echo "The apiserver filled in the defaults:"
"$kubectl" get dc hello -o jsonpath='{"  strategy: "}{.spec.strategy}{"\n  triggers: "}{.spec.triggers}{"\n"}'

step "Changing the template: revision 2 rolls out"
"$kubectl" patch dc hello --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/env/0/value","value":"hello again"}]'
"$kubectl" wait dc/hello --for=jsonpath='{.status.latestVersion}'=2 --timeout=60s >/dev/null
"$kubectl" stagehand rollout status dc/hello --timeout=2m
"$kubectl" get dc hello

step "The revisions are ReplicaSets: revision 2 runs, revision 1 is kept at 0 for rollback"
"$kubectl" get rs -l stagehand.dev/config=hello \
  -o custom-columns='NAME:.metadata.name,REVISION:.metadata.labels.stagehand\.dev/revision,DESIRED:.spec.replicas,READY:.status.readyReplicas,PHASE:.metadata.annotations.stagehand\.dev/phase,CAUSE:.metadata.annotations.stagehand\.dev/cause'
"$kubectl" get pods -l app=hello

step "The deployer pod's log tells the story of revision 2"
"$kubectl" stagehand rollout logs dc/hello

step "Hooks: examples/hooks.yaml (Recreate with pre, mid and post hooks)"
"$kubectl" apply -f examples/hooks.yaml
"$kubectl" wait dc/shop --for=jsonpath='{.status.latestVersion}'=1 --timeout=60s >/dev/null
"$kubectl" wait dc/shop --for=jsonpath='{.status.phase}'=Complete --timeout=180s
"$kubectl" patch dc shop --type=json -p '[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"RELEASE","value":"2"}]}]'
"$kubectl" wait dc/shop --for=jsonpath='{.status.latestVersion}'=2 --timeout=60s >/dev/null
echo "kubectl stagehand rollout status follows the rollout and its hooks:"
"$kubectl" stagehand rollout status dc/shop --timeout=3m
echo "The deployer's log of revision 2 carries the hooks' output (the mid hook is the migration):"
"$kubectl" stagehand rollout logs dc/shop --revision 2
echo
echo "Every hook start and success is an event on the DeploymentConfig:"
"$kubectl" get events --field-selector involvedObject.name=shop -o custom-columns='TYPE:.type,REASON:.reason,MESSAGE:.message' | grep -i hook | tail -6

step "Exec hooks: examples/exec-hooks.yaml (a cache flush inside the new pods after each rollout)"
"$kubectl" apply -f examples/exec-hooks.yaml
"$kubectl" wait dc/cache --for=jsonpath='{.status.latestVersion}'=1 --timeout=60s >/dev/null
"$kubectl" stagehand rollout status dc/cache --timeout=2m
"$kubectl" patch dc cache --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/env/0/value","value":"2"}]'
"$kubectl" wait dc/cache --for=jsonpath='{.status.latestVersion}'=2 --timeout=60s >/dev/null
"$kubectl" stagehand rollout status dc/cache --timeout=2m
echo "The post hook ran once in each new pod, through an ExecutionHook owned by revision 2:"
"$kubectl" get executionhooks -l stagehand.dev/config=cache,stagehand.dev/revision=2
"$kubectl" stagehand exec status cache-2-hook-post
echo
echo "The same flush on demand, with the HookAction flush-cache:"
"$kubectl" stagehand exec run flush-cache -l app=cache --name flush-now --wait --timeout 2m

step "Canary steps: examples/canary.yaml (1 pod of 4, a check inside it, then a pause for a person)"
"$kubectl" apply -f examples/canary.yaml
"$kubectl" wait dc/canary --for=jsonpath='{.status.latestVersion}'=1 --timeout=60s >/dev/null
"$kubectl" stagehand rollout status dc/canary --timeout=2m
"$kubectl" patch dc canary --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/env/0/value","value":"2"}]'
for _ in $(seq 120); do
  "$kubectl" stagehand get dc/canary 2>/dev/null | grep -q 'paused until resumed' && break
  sleep 1
done
echo "Revision 2 runs 1 pod beside 3 of revision 1, checked from inside, and waits:"
"$kubectl" stagehand get dc/canary
echo "The check's output, from the deployer's log:"
"$kubectl" stagehand rollout logs dc/canary --revision 2 | grep -E 'step|healthy'
echo
echo "After a look, rollout resume lets it go on (50%, a 3 s pause, then 100%):"
"$kubectl" stagehand rollout resume dc/canary
"$kubectl" stagehand rollout status dc/canary --timeout=2m

step "DeferPolicy: examples/defer.yaml (flush, archive and deregister after a ledger pod stops)"
"$kubectl" apply -f examples/defer.yaml
"$kubectl" stagehand rollout status dc/ledger --timeout=2m
"$kubectl" wait pvc/ledger-data --for=jsonpath='{.status.phase}'=Bound --timeout=60s >/dev/null
pod=$("$kubectl" get pods -l app=ledger -o jsonpath='{.items[0].metadata.name}')
uid=$("$kubectl" get pod "$pod" -o jsonpath='{.metadata.uid}')
echo "Pod $pod carries the finalizer from its creation: $("$kubectl" get pod "$pod" -o jsonpath='{.metadata.finalizers}')"
echo "Deleting it: it stays Terminating while the steps run on its node, with its volume"
"$kubectl" delete pod "$pod" --wait=false
"$kubectl" stagehand defer status "$pod" || true
"$kubectl" wait pod "$pod" --for=delete --timeout=150s
echo "The steps' output (each step is a pod, kept for --defer-step-ttl):"
for s in $("$kubectl" get pods -l stagehand.dev/defer-step-of="$uid" --sort-by=.metadata.creationTimestamp -o name); do
  "$kubectl" logs "$s"
done
echo
echo "Each step is an event on the pod:"
"$kubectl" get events --field-selector involvedObject.name="$pod" --sort-by=.lastTimestamp \
  -o custom-columns='REASON:.reason,MESSAGE:.message' | grep -i defer
"$kubectl" get deferpolicy ledger-cleanup

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

step "Operating rollouts: kubectl stagehand rollout history and undo"
"$kubectl" stagehand rollout history dc/hello
echo
echo "A dry run shows what a rollback to the previous revision changes:"
"$kubectl" stagehand rollout undo dc/hello --dry-run
echo
"$kubectl" stagehand rollout undo dc/hello
"$kubectl" stagehand rollout status dc/hello --timeout=2m
echo
"$kubectl" stagehand rollout history dc/hello

echo
echo "The cluster keeps running. Use it with:  export KUBECONFIG=$KUBECONFIG PATH=$bin:\$PATH"
echo "                                         kubectl stagehand rollout history dc/shop"
echo "Stop it with:                            make cluster-down"
