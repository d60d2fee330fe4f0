//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// env is the cluster every test of this binary runs against.
var env *framework.Env

func TestMain(m *testing.M) {
	var err error
	env, err = framework.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}
