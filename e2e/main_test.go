//go:build e2e

package e2e

import (
	"testing"

	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// env is the cluster every test of this binary runs against; nil when there is none
// (no E2E_KUBECONFIG and no control plane built, outside CI), and the tests skip with
// skipReason.
var (
	env        *framework.Env
	skipReason string
)

func TestMain(m *testing.M) {
	framework.Main(m, "e2e", func(e *framework.Env, reason string) { env, skipReason = e, reason })
}

// requireCluster skips the test when the suite has no cluster (fails it in CI). Every
// test calls it first, or requireController, which calls it.
func requireCluster(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
}
