// Command stagehand-example-strategy is an example custom strategy image, written with the
// deployer SDK (github.com/stagehand-dev/stagehand/deployer): a canary gate in front of
// the built-in Rolling strategy.
//
//  1. Scale the older revisions down, as every deployer does.
//  2. Scale the new revision to 1 pod, the canary, and wait until it is available.
//  3. Check it: GET $CHECK_URL must answer 2xx (skipped when CHECK_URL is unset).
//  4. Passed: finish with the built-in Rolling strategy. Failed: scale the canary back to
//     0, write the termination message with reason CanaryCheckFailed and exit 1.
//
// See README.md and docs/custom-strategies.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
)

const name = "stagehand-example-strategy"

// ReasonCanaryCheckFailed is the termination reason of a rollout that the check stopped.
const ReasonCanaryCheckFailed = "CanaryCheckFailed"

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is deployer.Main around the canary flow, plus the termination reason of a failed
// check. deployer.Main writes the reason Failed for any error that is not one of the SDK's
// typed errors, so after it returns, a failed check's message is written again with its
// own reason. (The SDK could instead offer an error type that carries a reason; see
// docs/custom-strategies.md.)
func run(args []string) int {
	var failure atomic.Pointer[string] // written by the flow's goroutine
	flow := func(ctx context.Context, d *deployer.Deployer) error {
		err := canary(ctx, d, http.DefaultClient)
		var failed *CheckFailedError
		if errors.As(err, &failed) {
			msg := err.Error()
			failure.Store(&msg)
		}
		return err
	}
	code := deployer.Main(name, args, flow)
	if msg := failure.Load(); msg != nil && code == int(v1alpha1.ExitFailed) {
		m := v1alpha1.TerminationMessage{Reason: ReasonCanaryCheckFailed, Message: *msg}
		if err := deployer.WriteTerminationMessage(terminationMessagePath(args), m); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
	}
	return code
}

// canary is the flow: a canary pod, its check, then the built-in Rolling strategy.
func canary(ctx context.Context, d *deployer.Deployer, client *http.Client) error {
	check, err := LoadCheck()
	if err != nil {
		return err
	}
	if err := d.ScaleDownOlder(ctx); err != nil {
		return err
	}
	to := d.Inputs.To
	if d.Inputs.Desired == 0 {
		d.Out.Printf("No canary: %s runs 0 pods", to.Name)
		return d.RunStrategy(ctx, v1alpha1.DeploymentStrategyTypeRolling)
	}
	d.Out.Printf("Canary: starting 1 pod of %s", to.Name)
	scaled, err := d.ScaleAndWait(ctx, to, 1)
	if err != nil {
		return fmt.Errorf("starting the canary pod of %s: %w", to.Name, err)
	}
	d.Out.Printf("Canary %s is available; checking it", to.Name)
	err = check.Run(ctx, client, d.Out.Printf)
	var failed *CheckFailedError
	if !errors.As(err, &failed) {
		if err != nil {
			return err // cancelled: the deployer exits 5 and the controller scales back
		}
		d.Out.Printf("Canary check passed; rolling %s out with the built-in Rolling strategy", to.Name)
		return d.RunStrategy(ctx, v1alpha1.DeploymentStrategyTypeRolling)
	}
	d.Out.Printf("Canary check failed; scaling %s back to 0", to.Name)
	if _, serr := d.ScaleAndWait(ctx, scaled, 0); serr != nil {
		return fmt.Errorf("the canary check of %s failed: %w; scaling the canary back to 0 failed too: %w", to.Name, err, serr)
	}
	serving := "no earlier revision serves"
	if d.Inputs.From != nil {
		serving = d.Inputs.From.Name + " still serves"
	}
	return fmt.Errorf("the canary check of %s failed: %w. The canary was scaled back to 0 and %s. "+
		"Fix the new version (see kubectl logs of its pods) or the check (CHECK_URL in spec.strategy.customParams.environment), then start a new rollout",
		to.Name, err, serving)
}

// terminationMessagePath is where deployer.Main wrote the termination message: the
// environment's path, or --termination-message-path. Main has already parsed and
// checked args.
func terminationMessagePath(args []string) string {
	cfg, _ := deployer.LoadConfig() // Main reported any error
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("version", false, "")
	cfg.BindFlags(fs)
	_ = fs.Parse(args)
	return cfg.TerminationMessagePath
}
