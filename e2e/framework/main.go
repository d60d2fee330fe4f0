package framework

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// Main is the TestMain of a test binary that runs on the suite's cluster. The gate decides
// whether there is one (E2E_KUBECONFIG, or the control-plane binaries; missing fails with
// CI=true); Main starts it (Start), hands it to use together with the reason the tests
// skip when there is none (env is then nil), runs the tests, stops the cluster and exits.
// name prefixes its error messages. On the local cluster, a passing run also fails when a
// pod is left Terminating (StuckTerminating).
func Main(m *testing.M, name string, use func(env *Env, skipReason string)) {
	MainWith(m, name, StartOptions{}, use)
}

// MainWith is Main for a binary whose local cluster needs options (more nodes, controller
// arguments).
func MainWith(m *testing.M, name string, opts StartOptions, use func(env *Env, skipReason string)) {
	reason := ClusterMissing()
	if reason == "" && opts.RealNode {
		reason = RealNodeMissing()
	}
	skip, err := gate.Check(reason)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	var env *Env
	if !skip {
		if env, err = StartWith(context.Background(), opts); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
	}
	use(env, reason)
	code := m.Run()
	if env != nil && env.Local() {
		if stuck := checkNoneTerminating(env, name); code == 0 {
			code = stuck
		}
	}
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}
