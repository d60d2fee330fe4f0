package strategies

import (
	"context"
	"errors"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod"
)

// Hook stages: the values of the stagehand.dev/hook label and the <stage> of hook pod names.
const (
	StagePre  = "pre"
	StageMid  = "mid"
	StagePost = "post"
)

// HookRunner runs a lifecycle hook at one stage of a rollout. The strategies call it at
// every stage, with a nil hook when none is configured. A hook with failure policy Abort
// (or an exhausted Retry) that fails returns a *HookFailedError; a hook that cannot be
// built from the template an *InvalidError; a cancelled one ErrCancelled.
type HookRunner interface {
	Run(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error
}

// PodHooks is the HookRunner of the built-in deployer: it runs each hook as a hook pod
// (hookpod.Runner) and maps the errors of hookpod to the strategies' typed errors.
type PodHooks struct {
	Runner *hookpod.Runner
}

var _ HookRunner = PodHooks{}

// Run runs hook at stage through the hookpod.Runner.
func (h PodHooks) Run(ctx context.Context, stage string, hook *v1alpha1.LifecycleHook) error {
	err := h.Runner.Run(ctx, stage, hook)
	var (
		abort   *hookpod.AbortError
		invalid *hookpod.InvalidHookError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &abort):
		return &HookFailedError{Stage: stage, Err: err}
	case errors.As(err, &invalid):
		return Invalidf("%s", invalid.Message)
	}
	return cancelled(ctx, err)
}
