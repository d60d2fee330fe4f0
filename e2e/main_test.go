//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
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
	skipReason = framework.ClusterMissing()
	skip, err := gate.Check(skipReason)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if !skip {
		if env, err = framework.Start(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}

// requireCluster skips the test when the suite has no cluster (fails it in CI). Every
// test calls it first, or requireController, which calls it.
func requireCluster(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
}
