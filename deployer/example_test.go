package deployer_test

import (
	"context"
	"os"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
)

// canary is the custom strategy of docs/deployer-contract.md: one new pod first, a smoke
// test in a hook pod, then the built-in Rolling.
func canary(ctx context.Context, d *deployer.Deployer) error {
	if err := d.ScaleDownOlder(ctx); err != nil {
		return err
	}
	if _, err := d.ScaleAndWait(ctx, d.Inputs.To, 1); err != nil {
		return err
	}
	d.Out.Printf("Canary %s is available; testing it", d.Inputs.To.Name)
	smoke := &v1alpha1.LifecycleHook{
		FailurePolicy: v1alpha1.LifecycleHookFailurePolicyAbort,
		ExecNewPod: &v1alpha1.ExecNewPodHook{
			ContainerName: d.Inputs.Config.Spec.Template.Spec.Containers[0].Name,
			Command:       []string{"/bin/smoke-test", "--target=" + d.Inputs.To.Name},
		},
	}
	if err := d.RunHook(ctx, "canary", smoke); err != nil {
		return err
	}
	return d.RunStrategy(ctx, v1alpha1.DeploymentStrategyTypeRolling)
}

// A custom strategy image is a main that hands its flow to deployer.Main.
func ExampleMain() {
	if false { // an example that compiles; running it needs a revision to deploy
		os.Exit(deployer.Main("canary-deployer", os.Args[1:], canary))
	}
}
