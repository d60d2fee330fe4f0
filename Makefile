# Stagehand's Makefile. `make help` lists the targets; each documents itself with `## `.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

MODULE  := github.com/stagehand-dev/stagehand
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X $(MODULE)/internal/version.Version=$(VERSION)
BIN     := $(CURDIR)/bin
# Binaries of the product, and of the local cluster that the tests and the demo run on.
COMMANDS := stagehand-controller stagehand-deployer kubectl-stagehand
TEST_COMMANDS := stagehand-localcluster stagehand-testapp stagehand-example-strategy
GO_TEST_FLAGS ?= -count=1 -timeout=40m
# The Go modules besides the product's at the root: the e2e suite and its integration tests
# import the product; the local cluster and the image builder import nothing of it.
E2E_MODULE          := e2e
LOCALCLUSTER_MODULE := e2e/localcluster
# Build-only: the image builder of make oci-images and its check against the Dockerfiles.
IMAGES_MODULE       := hack/images
IMAGE_TAG           ?= dev

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the binaries into bin/: stagehand-controller, stagehand-deployer, kubectl-stagehand (and the local cluster's).
	@mkdir -p $(BIN)
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ $(addprefix ./cmd/,$(COMMANDS))
	cd $(LOCALCLUSTER_MODULE) && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(BIN)/ ./cmd/stagehand-localcluster
	cd $(E2E_MODULE) && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(BIN)/stagehand-testapp ./testapp
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/stagehand-example-strategy ./examples/custom-strategy

.PHONY: controlplane
controlplane: ## Build etcd and the Kubernetes control plane for the local cluster into bin/k8s-v*/ (skipped when present).
	hack/build-controlplane.sh

.PHONY: registry
registry: ## Install Debian's docker-registry for the local cluster's registry (skipped when on PATH; uses apt-get).
	hack/install-registry.sh

.PHONY: chromium
chromium: ## Install Debian's chromium for the dashboard's browser test (skipped when on PATH; uses apt-get).
	hack/install-chromium.sh

.PHONY: generate
generate: ## Regenerate deepcopy, the clientset, listers, informers and the CRDs.
	hack/update-codegen.sh

.PHONY: verify
verify: ## Check that generated code is current, gofmt, go vet and golangci-lint are clean.
	hack/verify.sh

.PHONY: tools
tools: ## Build the pinned Helm and krew into bin/tools/ (skipped when current).
	hack/build-tools.sh

.PHONY: release
release: ## Build the release archives (3 binaries for linux and darwin, amd64 and arm64) with sha256 sums into dist/, and the krew manifest plugins/stagehand.yaml.
	hack/release.sh

.PHONY: test
test: build controlplane registry tools node oci-images chromium ## Run every test: unit tests, the integration and e2e suites on a local control plane, the oldest supported Kubernetes (test-oldest), and the real-node suite (needs root).
	go test $(GO_TEST_FLAGS) ./...
	cd $(LOCALCLUSTER_MODULE) && go test $(GO_TEST_FLAGS) -tags e2e,realnode ./...
	cd $(E2E_MODULE) && go test $(GO_TEST_FLAGS) -tags e2e ./...
	cd $(IMAGES_MODULE) && go test $(GO_TEST_FLAGS) ./...
	$(MAKE) --no-print-directory test-oldest
	$(MAKE) --no-print-directory test-demo
	$(MAKE) --no-print-directory test-realnode-suite

# The real-node suite runs alone, after the others: one real node per machine at a time. -v
# puts the pushed images' digests and each pod's containerd container IDs in the test log.
.PHONY: test-realnode-suite
test-realnode-suite:
	cd $(E2E_MODULE) && go test $(GO_TEST_FLAGS) -tags e2e,realnode -v ./realnode/

# The oldest Kubernetes that Stagehand supports (docs/install.md): the version pinned in
# hack/tools/controlplane-oldest. On it, deploy/ installs (without the 1.36 MutatingAdmissionPolicy),
# every admission policy type-checks, and rollouts, hooks, defer steps and notifications run.
OLDEST_KUBE_VERSION := $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" { print $$3 }' hack/tools/controlplane-oldest/go.mod)
OLDEST_TESTS := TestAdmission.*|TestDeferBeforeEvictionNeedsTheEvictionRequestAPI|TestDeferRunningStepsNeedsCreatePods|TestDeferControllerIdentityStepPodsAndPodUpdates|TestSecurityPoliciesAreInstalledAndTypeCheck|TestForgedSnapshotIsRefused|TestExecutionHookAdmission|TestDeploymentConfigExecHookAdmission|TestDeferPolicySchemaNamesTheField|TestDeferStepsPolicyTypeChecks|TestDeferStepsRunInOrderOnTheSameNodeWithThePodsVolume|TestNotifierSendsEachEventOnceSigned|TestNotifierNeedsTheRightToReadItsSecrets|TestNotifierSaysWhenItCannotSend|TestStatefulSetRolloutWalksFromTheHighestOrdinalAndKeepsTheClaims|TestRefusedReplicaSetFailsTheRevisionAtOnce

.PHONY: test-oldest
test-oldest: build registry oci-images ## Run the install, admission and core e2e tests on the oldest supported Kubernetes (built into bin/k8s-v$(OLDEST_KUBE_VERSION)/).
	KUBE_OLDEST=1 hack/build-controlplane.sh
	cd $(E2E_MODULE) && STAGEHAND_KUBERNETES_VERSION=$(OLDEST_KUBE_VERSION) go test $(GO_TEST_FLAGS) -tags e2e -run '^($(OLDEST_TESTS))$$' .

.PHONY: node
node: ## Install containerd, runc, iptables and the CNI plugins with apt-get (hack/install-node.sh), and build the kubelet and kube-proxy (hack/build-kubelet.sh), for the real node.
	hack/install-node.sh
	hack/build-kubelet.sh

.PHONY: test-realnode
test-realnode: build controlplane registry node oci-images ## Run only the real-node tests: TestRealNode and the real-node suite e2e/realnode (needs root).
	cd $(LOCALCLUSTER_MODULE) && go test $(GO_TEST_FLAGS) -tags e2e,realnode -run 'TestRealNode$$' -v .
	$(MAKE) --no-print-directory test-realnode-suite

.PHONY: unit
unit: ## Run only the tests that need no cluster, in the four modules (without the e2e tag: no control plane starts).
	go test $(GO_TEST_FLAGS) ./...
	cd $(LOCALCLUSTER_MODULE) && go test $(GO_TEST_FLAGS) ./...
	cd $(E2E_MODULE) && go test $(GO_TEST_FLAGS) ./...
	cd $(IMAGES_MODULE) && go test $(GO_TEST_FLAGS) ./...

.PHONY: chaos
chaos: build controlplane registry ## Run the chaos suite at full size: 100 rollouts on 20 DCs while the leader is killed, nodes stop and are lost, the apiserver and etcd restart (STAGEHAND_SEED=N replays a run; report in bin/chaos/).
	cd $(E2E_MODULE) && STAGEHAND_CHAOS=full go test -count=1 -timeout=90m -tags e2e -run 'TestChaos$$' -v ./chaos/

.PHONY: demo
demo: build controlplane ## Start the local control plane, install Stagehand and show a DeploymentConfig.
	hack/demo.sh

# The README's first command, end to end, then the cluster it leaves running is stopped.
.PHONY: test-demo
test-demo: build controlplane ## Run make demo and stop its cluster (part of make test: the README's first command stays true).
	hack/demo.sh >$(BIN)/demo.log 2>&1 || { tail -40 $(BIN)/demo.log; $(MAKE) --no-print-directory cluster-down; exit 1; }
	$(MAKE) --no-print-directory cluster-down
	@echo "make demo: OK (log in $(BIN)/demo.log)"

.PHONY: cluster-up
cluster-up: build controlplane registry ## Start the local cluster and its registry in .localcluster/ (then: eval "$$(bin/stagehand-localcluster env)").
	$(BIN)/stagehand-localcluster up --registry

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and every process it started.
	@if [[ -x $(BIN)/stagehand-localcluster ]]; then $(BIN)/stagehand-localcluster down; fi

.PHONY: images
images: ## Build the container images with docker (needs a Docker engine).
	hack/images.sh

.PHONY: oci-images
oci-images: build ## Build the images without Docker into the OCI layout bin/oci-images (installs busybox-static with apt-get); STAGEHAND_REGISTRY=host:port also pushes them there over plain HTTP.
	hack/install-busybox.sh
	cd $(IMAGES_MODULE) && go build -o $(BIN)/tools/oci-images ./cmd/oci-images
	$(BIN)/tools/oci-images -bin $(BIN) -out $(BIN)/oci-images -tag $(IMAGE_TAG)

.PHONY: e2e-kind
e2e-kind: ## Run the e2e suite on a kind cluster (needs Docker and kind).
	hack/e2e-kind.sh

.PHONY: bench
bench: build controlplane ## Benchmark DeploymentConfig rollouts against the native Deployment controller on the local cluster; writes docs/performance.{md,json} and docs/performance-rollout.svg.
	cd $(E2E_MODULE) && go build -o $(BIN)/stagehand-bench ./bench
	$(BIN)/stagehand-bench -out $(CURDIR)/docs

.PHONY: bench-quick
bench-quick: build controlplane ## A quick benchmark (10 replicas, Rolling, minReadySeconds 0 and 2, 3 rounds); writes bin/bench/, never docs/.
	cd $(E2E_MODULE) && go build -o $(BIN)/stagehand-bench ./bench
	$(BIN)/stagehand-bench -quick -out $(BIN)/bench

.PHONY: clean
clean: cluster-down ## Remove built binaries (keeps the cached control plane in bin/k8s-v*).
	rm -f $(addprefix $(BIN)/,$(COMMANDS) $(TEST_COMMANDS) stagehand-bench)
	rm -rf $(BIN)/oci-images
