//go:build e2e

// Package chaos runs rollouts on a three-node local cluster while it injects faults: the
// leader controller SIGKILLed, nodes stopped and lost, the apiserver and etcd restarted.
// Then it checks the invariants of DESIGN.md §4 and writes a report (docs/testing.md,
// "Chaos"). `make chaos` runs the full size; `make test` runs a small one with a fixed seed.
package chaos

import (
	"testing"

	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

var (
	env        *framework.Env
	skipReason string
)

// leaseArgs shorten the leader Lease (15 s / 10 s / 2 s by default) so that 50 takeovers
// fit in a run; the chaos checks correctness, not the default timings, which
// TestHATakeoverFinishesTheRolloutWithOneDeployerPod measures.
var leaseArgs = []string{"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s"}

func TestMain(m *testing.M) {
	framework.MainWith(m, "chaos", framework.StartOptions{Nodes: 3, ControllerArgs: leaseArgs},
		func(e *framework.Env, reason string) { env, skipReason = e, reason })
}

// requireLocalCluster skips (fails in CI) without a cluster, and skips on a cluster given
// by E2E_KUBECONFIG: faults need the local cluster's processes.
func requireLocalCluster(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
	if !env.Local() {
		t.Skip("injects faults into the local cluster's processes; E2E_KUBECONFIG's cluster has none to reach")
	}
}
