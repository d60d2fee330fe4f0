//go:build e2e

// Package helm installs Stagehand with its Helm chart (charts/stagehand) on a local
// cluster of its own, rolls out a DC with a hook, and upgrades the chart with that DC
// running (docs/install.md).
package helm

import (
	"testing"

	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

var (
	env        *framework.Env
	skipReason string
)

func TestMain(m *testing.M) {
	framework.MainWith(m, "helm", framework.StartOptions{NoInstall: true},
		func(e *framework.Env, reason string) { env, skipReason = e, reason })
}

func requireLocalCluster(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
	if !env.Local() {
		t.Skip("installs the chart on the local cluster; on E2E_KUBECONFIG's cluster, Stagehand is already installed")
	}
}
