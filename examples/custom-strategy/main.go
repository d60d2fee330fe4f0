// Command stagehand-example-strategy is an example custom strategy image, written with the
// deployer SDK (github.com/stagehand-dev/stagehand/deployer): a canary gate in front of
// the built-in Rolling strategy.
//
//  1. Scale the older revisions down, as every deployer does.
//  2. Scale the new revision to 1 pod, the canary, and wait until it is available.
//  3. Check it: GET $CHECK_URL must answer 2xx (skipped when CHECK_URL is unset).
//  4. Passed: finish with the built-in Rolling strategy. Failed: scale the canary back to
//     0 and end with a deployer.Failure: reason CanaryCheckFailed, exit code 1.
//
// See README.md and docs/custom-strategies.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
)

const name = "stagehand-example-strategy"

// ReasonCanaryCheckFailed is the termination reason of a rollout that the check stopped.
const ReasonCanaryCheckFailed = "CanaryCheckFailed"

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is deployer.Main around the canary flow.
func run(args []string) int {
	return deployer.Main(name, args, func(ctx context.Context, d *deployer.Deployer) error {
		return canary(ctx, d, http.DefaultClient)
	})
}

// canary is the flow: a canary pod, its check, then the built-in Rolling strategy.
func canary(ctx context.Context, d *deployer.Deployer, client *http.Client) error {
	check, err := LoadCheck()
	if err != nil {
		return err
	}
	// No ScaleDownOlder: the built-in Rolling below rolls from every older revision that
	// still serves (a superseded canary, a frozen revision), so their pods keep serving.
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
	return &deployer.Failure{
		Reason: ReasonCanaryCheckFailed,
		Message: fmt.Sprintf("the canary check of %s failed: %v. The canary was scaled back to 0 and %s. "+
			"Fix the new version (see kubectl logs of its pods) or the check (CHECK_URL in spec.strategy.customParams.environment), then start a new rollout",
			to.Name, err, serving),
		Err: err,
	}
}
