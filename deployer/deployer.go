package deployer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
	"github.com/stagehand-dev/stagehand/internal/revisions"
	"github.com/stagehand-dev/stagehand/strategies"
	"github.com/stagehand-dev/stagehand/strategies/recreate"
	"github.com/stagehand-dev/stagehand/strategies/rolling"
	"github.com/stagehand-dev/stagehand/strategies/statefulset"
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
	// Hooks runs lifecycle hooks as hook pods (strategies.PodHooks over HookPods).
	Hooks strategies.HookRunner
	// HookPods is the hookpod.Runner behind Hooks: the revision's hook pods.
	HookPods *hookpod.Runner
	// Until stops the built-in strategies early (--until); zero runs the whole rollout.
	Until strategies.Until
	// Out prints the "--> " progress lines (stdout).
	Out *strategies.Progress
	// Log carries the namespace, dc and revision fields.
	Log *logrus.Entry
	// Stagehand is the stagehand.dev client of exec hooks (nil: exec hooks fail as invalid).
	Stagehand stagehandclient.Interface
	// Done, when a Flow sets it, is the termination message of a success; the default
	// says the revision is complete.
	Done string
}

// Flow is a whole rollout. BuiltIn is the flow of the built-in image; a custom strategy
// image writes its own from the Deployer's steps.
type Flow func(ctx context.Context, d *Deployer) error

// New loads the inputs of the revision revisionName in namespace and returns the Deployer.
// sh is the stagehand.dev client of exec hooks (nil: exec hooks fail as invalid).
func New(ctx context.Context, client kubernetes.Interface, sh stagehandclient.Interface, namespace, revisionName string, out *strategies.Progress, log *logrus.Entry) (*Deployer, error) {
	// The deadline comes from the deployer pod; read it while the revisions load.
	now := time.Now()
	deadline := make(chan time.Time, 1)
	go func() { deadline <- PodDeadline(ctx, client, namespace, revisionName) }()
	in, err := LoadInputs(ctx, client, namespace, revisionName)
	if err != nil {
		return nil, err
	}
	log = LogFields(log, in)
	strategy := in.Config.Spec.Strategy
	at := <-deadline
	if at.IsZero() {
		log.Debug("no deployer pod to take the deadline from; counting activeDeadlineSeconds from now")
		at = now.Add(revision.ActiveDeadline(&strategy))
	}
	hookPods := hookpod.NewRunner(client.CoreV1(), in.To, hookpod.Options{
		Labels: strategy.Labels, Annotations: strategy.Annotations,
		Deadline: at, Out: out, Log: log, Stagehand: sh,
	})
	return &Deployer{
		Inputs:    in,
		Client:    client,
		Clients:   &strategies.KubeClients{Client: client, Namespace: namespace, Defer: &strategies.DeferredScaleDowns{Stagehand: sh, Namespace: namespace}},
		Hooks:     strategies.PodHooks{Runner: hookPods},
		HookPods:  hookPods,
		Out:       out,
		Log:       log,
		Stagehand: sh,
	}, nil
}

// LogFields adds the namespace, dc and revision fields of in to log.
func LogFields(log *logrus.Entry, in *Inputs) *logrus.Entry {
	return log.WithFields(logrus.Fields{"namespace": in.Namespace, "dc": in.ConfigName, "revision": in.To.Name})
}

// BuiltIn is the built-in flow: run the strategy of the snapshot (Recreate or Rolling)
// with its hooks, up to Until. The strategy rolls from every older revision that still
// serves, not only From (DESIGN §4 invariant 10): Rolling counts their pods as old ones
// and scales them down as the new pods become available; Recreate stops them with From.
func BuiltIn(ctx context.Context, d *Deployer) error {
	strategy, err := d.Strategy(d.Inputs.Config.Spec.Strategy.Type)
	if err != nil {
		return err
	}
	if err := d.checkUntil(); err != nil {
		return err
	}
	return strategy.Deploy(ctx, d.Inputs.From, d.Inputs.To, d.Inputs.Desired)
}

// Strategy returns the built-in strategy t, built over the Deployer's clients and hooks
// with the snapshot's parameters, stopping where Until says. A Custom strategy is an
// InvalidError: it runs the image of customParams, not this one.
func (d *Deployer) Strategy(t v1alpha1.DeploymentStrategyType) (strategies.Strategy, error) {
	spec := d.Inputs.Config.Spec
	// The step's parameters are the snapshot's, defaulted for type t: a Custom config that
	// runs Rolling as a step gets the same defaults as a Rolling config.
	step := v1alpha1.DeploymentStrategy{
		Type:           t,
		RecreateParams: spec.Strategy.RecreateParams.DeepCopy(),
		RollingParams:  spec.Strategy.RollingParams.DeepCopy(),
	}
	v1alpha1.SetStrategyDefaults(&step)
	switch t {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		return recreate.New(d.Clients, d.Hooks, d.Out, *step.RecreateParams, spec.MinReadySeconds).WithUntil(d.Until).WithOlder(d.Inputs.Older), nil
	case v1alpha1.DeploymentStrategyTypeRolling:
		if spec.StatefulSet != nil {
			return d.statefulSetRollout(*step.RollingParams)
		}
		first := recreate.FirstRollout(d.Clients, d.Hooks, d.Out, spec.MinReadySeconds)
		r := rolling.New(d.Clients, d.Hooks, d.Out, *step.RollingParams, spec.MinReadySeconds, first).WithUntil(d.Until).WithOlder(d.Inputs.Older)
		if signals, ok := d.Clients.(strategies.StepSignals); ok {
			r = r.WithSteps(signals)
		}
		return r, nil
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

// Timeout is the strategy's timeoutSeconds (its default for a Custom strategy).
func (d *Deployer) Timeout() time.Duration {
	return revision.Timeout(&d.Inputs.Config.Spec.Strategy)
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
// waits until its pods are gone. The built-in strategies do not need it: they roll from
// those revisions too (see BuiltIn). A custom flow that calls it before its own scaling
// drops the pods they serve.
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

// Finish writes the termination message of a rollout that ended with err, with the hooks
// this run finished, prints the last progress line, and returns the exit code.
func Finish(path string, err error, success string, hooks []v1alpha1.HookOutcome, out *strategies.Progress, log *logrus.Entry) v1alpha1.DeployerExitCode {
	code, reason := Outcome(err)
	switch {
	case err == nil:
		out.Printf("Success")
	case errors.Is(err, strategies.ErrUntilReached):
		out.Printf("%v", err)
	default:
		out.Printf("%s: %v", reason, err)
		log.WithError(err).WithField("exitCode", int(code)).Error("rollout did not complete")
	}
	if werr := WriteTerminationMessage(path, TerminationMessageFor(err, success, hooks...)); werr != nil {
		log.WithError(werr).Error("the controller will only see the exit code")
	}
	return code
}

// statefulSetRollout is the Rolling strategy of a DeploymentConfig with spec.statefulSet:
// the walk of its StatefulSet (docs/statefulsets.md).
func (d *Deployer) statefulSetRollout(params v1alpha1.RollingDeploymentStrategyParams) (strategies.Strategy, error) {
	if d.Until != (strategies.Until{}) {
		return nil, strategies.Invalidf("--until is not supported on a StatefulSet yet (docs/statefulsets.md)")
	}
	walker := &statefulset.Walker{
		Sets: &statefulset.KubeSets{KubeClients: strategies.KubeClients{Client: d.Client, Namespace: d.Inputs.Namespace}}, Out: d.Out,
		MinReadySeconds: d.Inputs.Config.Spec.MinReadySeconds, MaxUnavailable: params.MaxUnavailable,
		Timeout: revision.TimeoutFrom(params.TimeoutSeconds),
	}
	to := d.Inputs.To
	record := func(ctx context.Context) (*appsv1.ReplicaSet, error) {
		return revisions.Client{Kube: d.Client}.Get(ctx, to.Namespace, to.Name, true)
	}
	var deferred *strategies.DeferredScaleDowns
	if kc, ok := d.Clients.(*strategies.KubeClients); ok {
		deferred = kc.Defer
	}
	return &statefulset.Rollout{Walker: walker, Hooks: d.Hooks, Params: params, Config: d.Inputs.ConfigName, Record: record,
		Signals: statefulset.RecordSignals{Client: d.Client, Namespace: d.Inputs.Namespace}, Defer: deferred}, nil
}
