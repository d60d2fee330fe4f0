package deployer

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
	"github.com/stagehand-dev/stagehand/strategies/recreate"
	"github.com/stagehand-dev/stagehand/strategies/rolling"
)

// Deployer is one run of the deployer for one revision. It is the SDK of custom strategy
// images: a Flow gets it with the Inputs loaded and uses its steps.
type Deployer struct {
	// Inputs are the revision to deploy and the one it replaces.
	Inputs *Inputs
	// Client is the Kubernetes client, with the deployer pod's identity.
	Client kubernetes.Interface
	// Clients are the narrow clients of the revision's namespace that strategies use.
	Clients strategies.Clients
	// Hooks runs lifecycle hooks; NoHooks until the hooks issue.
	Hooks strategies.HookRunner
	// Out prints the "--> " progress lines (stdout).
	Out *strategies.Progress
	// Log carries the namespace, dc and revision fields.
	Log *logrus.Entry
}

// Flow is a whole rollout. BuiltIn is the flow of the built-in image; a custom strategy
// image writes its own from the Deployer's steps.
type Flow func(ctx context.Context, d *Deployer) error

// New loads the inputs of revision in namespace and returns the Deployer.
func New(ctx context.Context, client kubernetes.Interface, namespace, revision string, out *strategies.Progress, log *logrus.Entry) (*Deployer, error) {
	in, err := LoadInputs(ctx, client, namespace, revision)
	if err != nil {
		return nil, err
	}
	return &Deployer{
		Inputs:  in,
		Client:  client,
		Clients: strategies.NewKubeClients(client, namespace),
		Hooks:   strategies.NoHooks{Out: out},
		Out:     out,
		Log:     LogFields(log, in),
	}, nil
}

// LogFields adds the namespace, dc and revision fields of in to log.
func LogFields(log *logrus.Entry, in *Inputs) *logrus.Entry {
	return log.WithFields(logrus.Fields{"namespace": in.Namespace, "dc": in.ConfigName, "revision": in.To.Name})
}

// BuiltIn is the built-in flow: scale the older revisions down, then run the strategy
// of the snapshot (Recreate or Rolling).
func BuiltIn(ctx context.Context, d *Deployer) error {
	strategy, err := d.Strategy(d.Inputs.Config.Spec.Strategy.Type)
	if err != nil {
		return err
	}
	if err := d.CheckHooks(); err != nil {
		return err
	}
	if err := d.ScaleDownOlder(ctx); err != nil {
		return err
	}
	return strategy.Deploy(ctx, d.Inputs.From, d.Inputs.To, d.Inputs.Desired)
}

// Strategy returns the built-in strategy t, built over the Deployer's clients and hooks
// with the snapshot's parameters. A Custom strategy is an InvalidError: it runs the image
// of customParams, not this one.
func (d *Deployer) Strategy(t v1alpha1.DeploymentStrategyType) (strategies.Strategy, error) {
	spec := d.Inputs.Config.Spec
	switch t {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		params := v1alpha1.RecreateDeploymentStrategyParams{}
		if spec.Strategy.RecreateParams != nil {
			params = *spec.Strategy.RecreateParams
		}
		return recreate.New(d.Clients, d.Hooks, d.Out, params, spec.MinReadySeconds), nil
	case v1alpha1.DeploymentStrategyTypeRolling:
		params := v1alpha1.RollingDeploymentStrategyParams{}
		if spec.Strategy.RollingParams != nil {
			params = *spec.Strategy.RollingParams
		}
		return rolling.New(d.Clients, d.Hooks, d.Out, params, spec.MinReadySeconds), nil
	case v1alpha1.DeploymentStrategyTypeCustom:
		return nil, strategies.Invalidf("strategy type Custom runs the image of spec.strategy.customParams.image, not the built-in deployer; set that image, or use Recreate or Rolling")
	}
	return nil, strategies.Invalidf("unknown strategy type %q in the snapshot of %s: use Recreate, Rolling or Custom", t, d.Inputs.To.Name)
}

// RunStrategy runs the built-in strategy t as one step of a flow, from Inputs.From to
// Inputs.To with Inputs.Desired replicas.
func (d *Deployer) RunStrategy(ctx context.Context, t v1alpha1.DeploymentStrategyType) error {
	strategy, err := d.Strategy(t)
	if err != nil {
		return err
	}
	return strategy.Deploy(ctx, d.Inputs.From, d.Inputs.To, d.Inputs.Desired)
}

// CheckHooks refuses, before anything is scaled, a strategy with lifecycle hooks while
// Hooks is NoHooks: failing at the mid hook would leave the application down.
func (d *Deployer) CheckHooks() error {
	if _, ok := d.Hooks.(strategies.NoHooks); !ok {
		return nil
	}
	s := d.Inputs.Config.Spec.Strategy
	stages := map[string]*v1alpha1.LifecycleHook{}
	if p := s.RecreateParams; p != nil && s.Type == v1alpha1.DeploymentStrategyTypeRecreate {
		stages[strategies.StagePre], stages[strategies.StageMid], stages[strategies.StagePost] = p.Pre, p.Mid, p.Post
	}
	if p := s.RollingParams; p != nil && s.Type == v1alpha1.DeploymentStrategyTypeRolling {
		stages[strategies.StagePre], stages[strategies.StagePost] = p.Pre, p.Post
	}
	for _, stage := range []string{strategies.StagePre, strategies.StageMid, strategies.StagePost} {
		if stages[stage] != nil {
			return strategies.ErrHooksUnsupported(stage)
		}
	}
	return nil
}

// Timeout is the strategy's timeoutSeconds (its default for a Custom strategy).
func (d *Deployer) Timeout() time.Duration {
	seconds := v1alpha1.StrategyTimeoutSeconds(&d.Inputs.Config.Spec.Strategy)
	if seconds <= 0 {
		seconds = v1alpha1.DefaultTimeoutSeconds
	}
	return time.Duration(seconds) * time.Second
}

// ScaleAndWait scales rs to replicas and waits, within Timeout, until its pods are gone
// (for 0) or all available (minReadySeconds of the snapshot included). It returns rs as
// scaled. Scaling to the current value and waiting on a condition that holds return at once.
func (d *Deployer) ScaleAndWait(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32) (*appsv1.ReplicaSet, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the watch
	tracker, err := strategies.StartPodTracker(ctx, d.Clients, strategies.PodWatchSelector(rs))
	if err != nil {
		return nil, err
	}
	s := &strategies.Scaler{Clients: d.Clients, Tracker: tracker, Out: d.Out, MinReadySeconds: d.Inputs.Config.Spec.MinReadySeconds}
	return s.ScaleAndWait(ctx, rs, replicas, d.Timeout())
}

// ScaleDownOlder scales every older revision but From that still has replicas to 0, and
// waits until its pods are gone.
func (d *Deployer) ScaleDownOlder(ctx context.Context) error {
	for i, rs := range d.Inputs.Older {
		scaled, err := d.ScaleAndWait(ctx, rs, 0)
		if err != nil {
			return fmt.Errorf("scaling the older revision %s down: %w", rs.Name, err)
		}
		d.Inputs.Older[i] = scaled
	}
	return nil
}

// Finish writes the termination message of a rollout that ended with err, prints the
// last progress line, and returns the exit code.
func Finish(path string, err error, success string, out *strategies.Progress, log *logrus.Entry) v1alpha1.DeployerExitCode {
	code, reason := Outcome(err)
	if err == nil {
		out.Printf("Success")
	} else {
		out.Printf("%s: %v", reason, err)
		log.WithError(err).WithField("exitCode", int(code)).Error("rollout did not complete")
	}
	if werr := WriteTerminationMessage(path, TerminationMessageFor(err, success)); werr != nil {
		log.WithError(werr).Error("the controller will only see the exit code")
	}
	return code
}
