package strategies

import (
	"context"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Hook stages: the values of the stagehand.dev/hook label and the <stage> of hook pod names.
const (
	StagePre  = "pre"
	StageMid  = "mid"
	StagePost = "post"
)

// HookRunner runs a lifecycle hook at one stage of a rollout. The strategies call it at
// every stage, with a nil hook when none is configured. A hook with failure policy Abort
// that fails returns a *HookFailedError.
type HookRunner interface {
	Run(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error
}

// NoHooks is the HookRunner until hook pods arrive with the hooks issue: it reports that
// a stage has no hook, and refuses a configured hook instead of pretending that it ran.
type NoHooks struct {
	Out *Progress
}

var _ HookRunner = NoHooks{}

// Run prints "--> <stage> hook: none" for a nil hook and fails with an InvalidError
// otherwise.
func (n NoHooks) Run(_ context.Context, stage string, hook *v1alpha1.LifecycleHook) error {
	if hook == nil {
		n.Out.Printf("%s hook: none", stage)
		return nil
	}
	return ErrHooksUnsupported(stage)
}

// ErrHooksUnsupported is the InvalidError of a configured hook that this deployer cannot
// run yet.
func ErrHooksUnsupported(stage string) error {
	return Invalidf("the strategy has a %s hook, but lifecycle hooks arrive with the hooks issue and this deployer cannot run them yet; remove the hook from the strategy", stage)
}
